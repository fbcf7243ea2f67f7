//! Challenge 1 — a reference solution.

use grading::Setup;
use grading::given::{bottom_of_backward, model_bytes, update};

// ANCHOR: activation_bytes
/// `a`: one hidden layer's output for a batch of `batch` rows.
pub fn activation_bytes(batch: u64, width: u64) -> u64 {
    // One float32 per row and neuron.
    batch * width * 4
}
// ANCHOR_END: activation_bytes

// ANCHOR: batch_bytes
/// `D`: the batch — features, labels and the loop's `y_pred`.
pub fn batch_bytes(setup: Setup) -> u64 {
    // Per row: float32 features, an int64 label, a float32 score per class.
    setup.batch * (setup.inputs * 4 + 8 + setup.classes * 4)
}
// ANCHOR_END: batch_bytes

// ANCHOR: top_of_backward
/// The top of the backward pass: `L·a + 2·a + G`.
pub fn top_of_backward(setup: Setup) -> u64 {
    let a = activation_bytes(setup.batch, setup.width);
    // The output layer's weights and biases, as gradients: made first.
    let g = (setup.width + 1) * setup.classes * 4;
    setup.layers * a + 2 * a + g
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
