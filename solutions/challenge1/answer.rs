//! Challenge 1 — a reference solution.
#![allow(unused_imports)]

use grading::{Opt, Setup};

// ANCHOR: activation_bytes
/// Bytes of one activation: the output of one hidden layer of `width` neurons for a batch
/// of `batch` rows.
pub fn activation_bytes(batch: u64, width: u64) -> u64 {
    // One float32 per row and neuron.
    batch * width * 4
}
// ANCHOR_END: activation_bytes

// ANCHOR: stored_activation_bytes
/// Bytes of all the activations a training step keeps for its backward pass, for a
/// network of `layers` hidden layers.
pub fn stored_activation_bytes(batch: u64, width: u64, layers: u64) -> u64 {
    // Every hidden layer's output is needed again when the backward pass reaches it.
    layers * activation_bytes(batch, width)
}
// ANCHOR_END: stored_activation_bytes

// ANCHOR: fits
/// Does training `setup` fit on a card of `card_bytes`? Add up what is in memory at the
/// busiest moment of a step (from the second step on, Adam's state exists) and compare.
pub fn fits(setup: Setup, card_bytes: u64) -> bool {
    let Setup {
        inputs,
        width,
        layers,
        classes,
        batch,
        optimizer,
    } = setup;
    // Weights and biases: input layer, hidden-to-hidden layers, output layer.
    let parameters =
        ((inputs + 1) * width + (layers - 1) * (width + 1) * width + (width + 1) * classes) * 4;
    // From the second step on, Adam keeps two running averages per parameter, and its
    // update makes square roots as large as all the parameters for a moment.
    let (state, update_temporaries) = match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (2 * parameters, parameters),
    };
    // Alive the whole step: the batch (features and an 8-byte int64 label per row) and the
    // loop's `y_pred`.
    let batch_bytes = batch * (inputs * 4 + 8) + batch * classes * 4;
    let activation = activation_bytes(batch, width);
    // The busiest moment is one of three. At the top of the backward pass every kept
    // activation is still there, plus two more batch × width tensors: the gradient coming
    // down and the ReLU's gradient made from it (and the output layer's gradients).
    let top_of_backward =
        stored_activation_bytes(batch, width, layers) + 2 * activation + (width + 1) * classes * 4;
    // Lower down, the gradients pile up while the activations are let go: near the bottom
    // every gradient exists, beside one kept activation and two gradients in flight.
    let bottom_of_backward = parameters + 3 * activation;
    // In the update, the activations are gone; the gradients and Adam's temporaries are not.
    let update = parameters + update_temporaries;
    let busiest = top_of_backward.max(bottom_of_backward).max(update);
    parameters + state + batch_bytes + busiest <= card_bytes
}
// ANCHOR_END: fits
