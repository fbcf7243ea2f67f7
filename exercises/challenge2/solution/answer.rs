//! Challenge 2 — a reference solution.
#![allow(unused_imports)]

use grading::{Opt, Setup};

// ANCHOR: parameter_count
/// Learnable values (weights and biases) of a network `inputs → layers × width → classes`.
pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
    // A dense layer from n to m features: n × m weights and m biases.
    let dense = |n: u64, m: u64| n * m + m;
    dense(inputs, width) + (layers - 1) * dense(width, width) + dense(width, classes)
}
// ANCHOR_END: parameter_count

// ANCHOR: model_bytes
/// Bytes that live as long as the model: parameters, gradients and optimizer state.
pub fn model_bytes(setup: Setup) -> u64 {
    let parameters = parameter_count(setup.inputs, setup.width, setup.layers, setup.classes);
    // The parameters themselves, a gradient each, and Adam's two running averages.
    let copies = match setup.optimizer {
        Opt::Sgd => 2,
        Opt::Adam => 4,
    };
    parameters * 4 * copies
}
// ANCHOR_END: model_bytes

// ANCHOR: deepest_fit
/// The most hidden layers (of `setup.width`, ignoring `setup.layers`) for which one training
/// step at `setup.batch` rows still fits on a card of `card_bytes`.
pub fn deepest_fit(setup: Setup, card_bytes: u64) -> u64 {
    // Memory at the busiest moment of a step: the model, the batch, one activation per
    // hidden layer plus the one being computed, and the output layer's loss terms.
    let step_bytes = |layers: u64| {
        let s = Setup { layers, ..setup };
        let activation = s.batch * s.width * 4;
        model_bytes(s)
            + s.batch * (s.inputs + 1) * 4
            + (layers + 1) * activation
            + s.batch * (s.classes + 2) * 4
    };
    let mut layers = 0;
    while step_bytes(layers + 1) <= card_bytes {
        layers += 1;
    }
    layers
}
// ANCHOR_END: deepest_fit
