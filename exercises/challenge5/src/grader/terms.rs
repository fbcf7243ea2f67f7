//! The single-card figures the exercise hands the learner, so that it is about the schemes:
//! what each scheme keeps whole, divides or adds is the learner's part.

use grading::measure::needs;
use grading::{Opt, Setup};

// ANCHOR: terms
/// One card's figures for a setup, in bytes (float32 values: 4 bytes each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    /// The weights and biases. Their gradients take as many bytes again.
    pub parameters: u64,
    /// The largest layer's weights and biases: what sharded training gathers whole on a card
    /// when that layer runs.
    pub largest_layer: u64,
    /// The optimizer's state: Adam's two running averages (2 × `parameters`); SGD none.
    pub optimizer_state: u64,
    /// What the optimizer's update makes and frees: Adam's square roots, as large as the
    /// parameters; SGD none.
    pub update_temporaries: u64,
    /// Everything else one card holds at the busiest moment of its step before the update,
    /// at `setup.batch` rows: the batch, the activations kept for the backward pass and the
    /// gradients flowing back through them. It grows with the batch, not with the model.
    pub activations: u64,
}
// ANCHOR_END: terms

/// [`Terms`] for `setup`, measured by the engine: the activations are what a planned SGD
/// step at `setup.batch` rows peaks at beyond its parameters and gradients.
pub fn terms(setup: Setup) -> Terms {
    let config = setup.config();
    let parameters = config.parameter_count() * 4;
    let sgd = Setup {
        optimizer: Opt::Sgd,
        ..setup
    };
    let step = needs(&sgd.config(), setup.batch).peak_requested;
    let adam = u64::from(setup.optimizer == Opt::Adam);
    Terms {
        parameters,
        largest_layer: largest_layer(setup) * 4,
        optimizer_state: 2 * parameters * adam,
        update_temporaries: parameters * adam,
        activations: step.saturating_sub(2 * parameters),
    }
}

/// Values in the largest of the network's dense layers (weights and biases).
fn largest_layer(s: Setup) -> u64 {
    let dense = |n: u64, m: u64| n * m + m;
    let hidden = if s.layers > 1 {
        dense(s.width, s.width)
    } else {
        0
    };
    dense(s.inputs, s.width)
        .max(hidden)
        .max(dense(s.width, s.classes))
}
