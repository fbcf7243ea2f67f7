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
/// Bytes of the model's own tensors: parameters, their gradients (made by the first
/// backward pass) and the optimizer's state (made by the first update).
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
    // Memory at the busiest moment of a step (the second: Adam's state exists by then).
    let step_bytes = |layers: u64| {
        let s = Setup { layers, ..setup };
        let parameters = parameter_count(s.inputs, s.width, layers, s.classes) * 4;
        // Adam: two running averages, and square roots as large as the parameters in its
        // update.
        let (state, update_temporaries) = match s.optimizer {
            Opt::Sgd => (0, 0),
            Opt::Adam => (2 * parameters, parameters),
        };
        // The batch (float32 features, int64 labels) and the loop's `y_pred`.
        let batch = s.batch * (s.inputs * 4 + 8 + s.classes * 4);
        let activation = s.batch * s.width * 4;
        // The top of the backward pass: every kept activation, two gradients beside them,
        // the output layer's gradients. The bottom: every gradient, three batch × width
        // tensors at most. The update: every gradient and Adam's square roots.
        let top = (layers + 2) * activation + (s.width + 1) * s.classes * 4;
        let bottom = parameters + 3 * activation;
        let update = parameters + update_temporaries;
        parameters + state + batch + top.max(bottom).max(update)
    };
    let mut layers = 0;
    while step_bytes(layers + 1) <= card_bytes {
        layers += 1;
    }
    layers
}
// ANCHOR_END: deepest_fit
