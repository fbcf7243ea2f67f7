//! Challenge 1 — the whole training set as one batch.
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this folder: the grader
//! compares what your functions return with what the engine measures when it plans the same
//! training steps, and tells you what it expected. Every value is float32 (4 bytes), except
//! the labels: int64 (8 bytes), as PyTorch's cross-entropy wants them.
//! To start again from the stub: `git checkout -- exercises/challenge1/src/answer.rs`.
#![allow(unused_variables, unused_imports)]

use grading::{Opt, Setup};

// ANCHOR: activation_bytes
/// Bytes of one activation: the output of one hidden layer of `width` neurons for a batch
/// of `batch` rows.
pub fn activation_bytes(batch: u64, width: u64) -> u64 {
    todo!("bytes of one batch × width float32 tensor")
}
// ANCHOR_END: activation_bytes

// ANCHOR: stored_activation_bytes
/// Bytes of all the activations a training step keeps for its backward pass, for a
/// network of `layers` hidden layers.
pub fn stored_activation_bytes(batch: u64, width: u64, layers: u64) -> u64 {
    todo!("what the forward pass leaves behind for the backward pass")
}
// ANCHOR_END: stored_activation_bytes

// ANCHOR: fits
/// Does training `setup` fit on a card of `card_bytes`? Add up what is in memory at the
/// busiest moment of a step (from the second step on, Adam's state exists) and compare.
pub fn fits(setup: Setup, card_bytes: u64) -> bool {
    todo!("the memory equation, then a comparison")
}
// ANCHOR_END: fits
