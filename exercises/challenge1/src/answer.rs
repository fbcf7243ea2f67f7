//! Challenge 1 — the whole training set as one batch.
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this folder: the grader
//! compares each piece with the tensors the engine allocates when it plans the same training
//! steps, and names the term a wrong answer lacks. Every value is float32 (4 bytes), except
//! the labels: int64 (8 bytes), as PyTorch's cross-entropy wants them.
//! To start again from the stub: `git checkout -- src/answer.rs` (in `exercises/challenge1`).
#![allow(unused_variables)]

use grading::Setup;
use grading::given::{bottom_of_backward, model_bytes, update};

// ANCHOR: activation_bytes
/// `a`: one hidden layer's output for a batch of `batch` rows.
pub fn activation_bytes(batch: u64, width: u64) -> u64 {
    todo!()
}
// ANCHOR_END: activation_bytes

// ANCHOR: batch_bytes
/// `D`: the batch — features, labels and the loop's `y_pred`.
pub fn batch_bytes(setup: Setup) -> u64 {
    todo!()
}
// ANCHOR_END: batch_bytes

// ANCHOR: top_of_backward
/// The top of the backward pass: `L·a + 2·a + G`.
pub fn top_of_backward(setup: Setup) -> u64 {
    todo!()
}
// ANCHOR_END: top_of_backward

// ANCHOR: fits
/// Given: the equation (Challenge 2 has you write the model's terms).
pub fn fits(setup: Setup, card_bytes: u64) -> bool {
    let s = setup;
    let busiest = top_of_backward(s).max(bottom_of_backward(s)).max(update(s));
    model_bytes(s) + batch_bytes(s) + busiest <= card_bytes
}
// ANCHOR_END: fits
