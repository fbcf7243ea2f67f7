//! Challenge 2 — how deep can the network grow before the card runs out?
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this folder: the grader
//! compares what your functions return with what the engine measures when it builds and
//! plans the same networks. Every value is float32 (4 bytes), except the labels: int64
//! (8 bytes).
//! To start again from the stub: `git checkout -- exercises/challenge2/src/answer.rs`.
#![allow(unused_variables, unused_imports)]

use grading::{Opt, Setup};

// ANCHOR: parameter_count
/// Learnable values (weights and biases) of a network `inputs → layers × width → classes`.
pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
    todo!("count every weight and bias")
}
// ANCHOR_END: parameter_count

// ANCHOR: model_bytes
/// Bytes of the model's own tensors: parameters, their gradients (made by the first
/// backward pass) and the optimizer's state (made by the first update).
pub fn model_bytes(setup: Setup) -> u64 {
    todo!("the memory that does not depend on the batch")
}
// ANCHOR_END: model_bytes

// ANCHOR: deepest_fit
/// The most hidden layers (of `setup.width`, ignoring `setup.layers`) for which one training
/// step at `setup.batch` rows still fits on a card of `card_bytes`.
pub fn deepest_fit(setup: Setup, card_bytes: u64) -> u64 {
    todo!("grow the network until it no longer fits")
}
// ANCHOR_END: deepest_fit
