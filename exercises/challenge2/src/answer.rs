//! Challenge 2 — how deep can the network grow before the card runs out?
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this folder: the grader
//! compares each piece with the tensors the engine allocates when it builds and plans the
//! same networks, and names the term a wrong answer lacks. Every value is float32 (4 bytes).
//! To start again from the stub: `git checkout -- src/answer.rs` (in `exercises/challenge2`).
#![allow(unused_variables, unused_imports)]

use grading::given::{batch_bytes, bottom_of_backward, top_of_backward};
use grading::{Opt, Setup};

// ANCHOR: parameter_count
/// Weights and biases of a network `inputs → layers × width → classes`,
/// `layers ≥ 1` (the grader never asks for 0 hidden layers).
pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
    todo!()
}
// ANCHOR_END: parameter_count

// ANCHOR: model_bytes
/// `P + S`: the parameters and the optimizer's state, in bytes.
pub fn model_bytes(setup: Setup) -> u64 {
    todo!()
}
// ANCHOR_END: model_bytes

// ANCHOR: update
/// The update: `P + R` (`R`: Adam's square roots).
pub fn update(setup: Setup) -> u64 {
    todo!()
}
// ANCHOR_END: update

// ANCHOR: deepest_fit
/// Given: one hidden layer more while the equation still fits.
pub fn deepest_fit(setup: Setup, card_bytes: u64) -> u64 {
    let fits = |layers| {
        let s = Setup { layers, ..setup };
        let busiest = top_of_backward(s).max(bottom_of_backward(s)).max(update(s));
        model_bytes(s) + batch_bytes(s) + busiest <= card_bytes
    };
    let mut layers = 0;
    while fits(layers + 1) {
        layers += 1;
    }
    layers
}
// ANCHOR_END: deepest_fit
