//! The memory equation's terms as the engine allocates them: requested bytes of the tensors
//! of a setup's first training step, read from the allocator's trace by role and name. The
//! graders of Challenges 1 and 2 compare each piece a learner writes with these, and name the
//! term a wrong answer lacks.

use crate::Setup;
use crate::measure::{requested, trace};
use gpumem::Role;
use gpumem::alloc::Trace;

/// Requested bytes of one setup's tensors, grouped as the page's equation groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The batch's features `x`.
    pub features: u64,
    /// The batch's int64 labels `y`.
    pub labels: u64,
    /// The output layer's output, `y_pred`.
    pub y_pred: u64,
    /// The first hidden layer's output (`a`).
    pub activation: u64,
    /// Every hidden layer's output kept for the backward pass (`L·a`).
    pub kept: u64,
    /// The first ReLU gradient the backward pass makes: one of the two batch × width
    /// gradients in flight.
    pub in_flight: u64,
    /// The output layer's weight and bias gradients (`G`).
    pub output_gradients: u64,
    /// The output layer's bias gradient.
    pub output_bias_gradient: u64,
    /// Every gradient (as large as the parameters).
    pub gradients: u64,
    /// Every weight and bias (`P`).
    pub parameters: u64,
    /// Every bias.
    pub biases: u64,
    /// The input layer's bias.
    pub input_bias: u64,
    /// The output layer's bias.
    pub output_bias: u64,
    /// The output layer's weights and bias.
    pub output_layer: u64,
    /// The input layer's weights and bias.
    pub input_layer: u64,
    /// One hidden-to-hidden layer's weights and bias (0 with one hidden layer).
    pub hidden_layer: u64,
    /// The optimizer's state (`S`).
    pub state: u64,
    /// `foreach` Adam's square roots in the update (`R`).
    pub roots: u64,
}

/// The allocations named `label` (the engine's names: `x`, `y_pred`, `layer1.bias.grad`).
fn named(t: &Trace, label: &str) -> u64 {
    t.events
        .iter()
        .filter(|e| e.kind == gpumem::alloc::EventKind::Alloc && e.label == label)
        .map(|e| e.requested)
        .sum()
}

/// The first allocation named `label`.
fn first_named(t: &Trace, label: &str) -> u64 {
    t.events
        .iter()
        .find(|e| e.kind == gpumem::alloc::EventKind::Alloc && e.label == label)
        .map_or(0, |e| e.requested)
}

impl Parts {
    /// The engine's tensors of `setup`'s first step.
    pub fn of(setup: &Setup) -> Parts {
        let t = trace(&setup.config(), setup.batch);
        let out = setup.layers as usize;
        let layer = |g: usize| {
            named(&t, &format!("layer{g}.weight")) + named(&t, &format!("layer{g}.bias"))
        };
        Parts {
            features: requested(&t, |r| r == Role::Input),
            labels: requested(&t, |r| r == Role::Labels),
            y_pred: first_named(&t, "y_pred"),
            activation: requested(&t, |r| r == Role::Activation { layer: 0 }),
            kept: requested(&t, |r| matches!(r, Role::Activation { .. })),
            in_flight: first_named(&t, "relu.grad"),
            output_gradients: requested(&t, |r| r == Role::Gradient { layer: out }),
            output_bias_gradient: named(&t, &format!("layer{out}.bias.grad")),
            gradients: requested(&t, |r| matches!(r, Role::Gradient { .. })),
            parameters: requested(&t, |r| matches!(r, Role::Parameter { .. })),
            biases: (0..=out)
                .map(|g| named(&t, &format!("layer{g}.bias")))
                .sum(),
            input_bias: named(&t, "layer0.bias"),
            output_bias: named(&t, &format!("layer{out}.bias")),
            output_layer: layer(out),
            input_layer: layer(0),
            hidden_layer: if out > 1 { layer(1) } else { 0 },
            state: requested(&t, |r| matches!(r, Role::OptimizerState { .. })),
            roots: t
                .events
                .iter()
                .filter(|e| {
                    e.kind == gpumem::alloc::EventKind::Alloc
                        && e.role == Some(Role::Temporary)
                        && e.label.ends_with("_foreach_sqrt")
                })
                .map(|e| e.requested)
                .sum(),
        }
    }
}

/// Setups whose terms all differ in size (first: a miss names one term), the lesson's, then
/// random ones drawn from `rng`: what the graders ask each piece of the equation about.
pub(crate) fn piece_setups(rng: &mut impl rand::Rng) -> Vec<Setup> {
    use crate::Opt;
    use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
    use rand::RngExt;
    let s = |inputs, width, layers, classes, batch, optimizer| Setup {
        inputs,
        width,
        layers,
        classes,
        batch,
        optimizer,
    };
    let mut setups = vec![
        s(20, 64, 3, 10, 1000, Opt::Sgd),
        s(784, 3000, 10, 100, 20_000, Opt::Adam),
        Setup::lesson(2000, 1, FULL, Opt::Sgd),
        Setup::lesson(5000, 2, 32, Opt::Adam),
    ];
    setups.extend((0..4).map(|_| {
        s(
            rng.random_range(1..=1000),
            rng.random_range(1..=4000),
            rng.random_range(1..=12),
            rng.random_range(2..=100),
            rng.random_range(1..=100_000),
            if rng.random_bool(0.5) {
                Opt::Adam
            } else {
                Opt::Sgd
            },
        )
    }));
    setups
}
