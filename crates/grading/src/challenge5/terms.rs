//! The single-card figures the exercise hands the learner, so that it is about the schemes:
//! what each scheme keeps whole, divides or adds is the learner's part.

use crate::measure::{needs, trace};
use crate::{Opt, Setup};
use gpumem::Role;
use gpumem::alloc::EventKind;
use gpumem::mlp::ZeroGrad;
use std::collections::HashMap;

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
    /// The busiest moment of the whole step on one card with the whole batch, as
    /// Challenge 2 measured it (the gradients freed after each update, as PyTorch 2 does).
    pub step_peak: u64,
    /// What one card holds at `setup.batch` rows beyond its parameters and gradients at the
    /// busiest moment of its forward and backward passes, were every gradient to exist all
    /// step long: the batch, the activations kept for the backward pass, the gradients
    /// flowing back through them, and a layer's gradient as it is made (before it is added
    /// to the one kept). It grows with the batch, not with the model.
    pub activations: u64,
    /// What the training loop still holds at `setup.batch` rows while the optimizer updates:
    /// the batch's inputs and labels, the network's output and the loss. Small beside the
    /// model, but on the card beside the update's temporaries.
    pub held_in_update: u64,
}
// ANCHOR_END: terms

/// [`Terms`] for `setup`, measured by the engine: the activations are what a planned SGD
/// step at `setup.batch` rows, its gradients kept, peaks at beyond parameters and gradients.
pub fn terms(setup: Setup) -> Terms {
    let config = setup.config();
    let parameters = config.parameter_count() * 4;
    // SGD keeping its gradients between steps (`zero_grad(set_to_none=False)`): every
    // gradient exists all step, so the peak beyond them is the batch's own.
    let mut kept = Setup {
        optimizer: Opt::Sgd,
        ..setup
    }
    .config();
    kept.strategy.zero_grad = ZeroGrad::Zero;
    let step = needs(&kept, setup.batch).peak_requested;
    let adam = u64::from(setup.optimizer == Opt::Adam);
    Terms {
        parameters,
        largest_layer: largest_layer(setup) * 4,
        optimizer_state: 2 * parameters * adam,
        update_temporaries: parameters * adam,
        step_peak: needs(&config, setup.batch).peak_requested,
        activations: step.saturating_sub(2 * parameters),
        held_in_update: held_in_update(setup),
    }
}

/// Requested bytes alive when Adam's update makes its first temporary, other than the
/// layers' parameters, gradients and state: measured on the engine's trace of a
/// planned Adam step at `setup.batch` rows (what the loop holds does not depend on the
/// optimizer).
fn held_in_update(setup: Setup) -> u64 {
    let config = Setup {
        optimizer: Opt::Adam,
        ..setup
    }
    .config();
    let mut live = HashMap::new();
    for e in trace(&config, setup.batch).events {
        match e.kind {
            EventKind::Alloc if e.role == Some(Role::Temporary) => break,
            EventKind::Alloc => {
                live.insert(e.addr, (e.role, e.requested));
            }
            EventKind::Free => {
                live.remove(&e.addr);
            }
            _ => {}
        }
    }
    live.values()
        .filter(|(role, _)| !role.is_some_and(Role::is_model))
        .map(|&(_, bytes)| bytes)
        .sum()
}

/// The bytes of parameters the fullest of `cards` cards updates under ZeRO-1: PyTorch's
/// `ZeroRedundancyOptimizer` hands out whole parameters (each weight, each bias), the
/// largest first, each to the card that holds the fewest bytes so far.
pub fn largest_share(setup: Setup, cards: u64) -> u64 {
    let s = setup;
    let mut dense = vec![(s.inputs, s.width)];
    dense.extend((1..s.layers).map(|_| (s.width, s.width)));
    dense.push((s.width, s.classes));
    let mut sizes: Vec<u64> = dense.iter().flat_map(|&(i, o)| [i * o, o]).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut held = vec![0u64; cards.max(1) as usize];
    for size in sizes {
        if let Some(emptiest) = held.iter_mut().min() {
            *emptiest += size;
        }
    }
    held.into_iter().max().unwrap_or(0) * 4
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
