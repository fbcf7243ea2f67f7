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
/// Does one training step of `setup` fit on a card of `card_bytes`? Add up what is in
/// memory at the busiest moment of the step and compare.
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
        (inputs + 1) * width + (layers - 1) * (width + 1) * width + (width + 1) * classes;
    // Each parameter has a gradient; Adam keeps two running averages as well.
    let copies = match optimizer {
        Opt::Sgd => 2,
        Opt::Adam => 4,
    };
    let model = parameters * 4 * copies;
    // The batch: the features and one 4-byte label per row.
    let data = batch * (inputs + 1) * 4;
    // The activations kept for backward, plus one more: while a layer runs, its output
    // exists both before and after the ReLU.
    let activations =
        stored_activation_bytes(batch, width, layers) + activation_bytes(batch, width);
    // The output layer: the logits' gradient and the per-row loss terms.
    let head = batch * (classes + 2) * 4;
    model + data + activations + head <= card_bytes
}
// ANCHOR_END: fits
