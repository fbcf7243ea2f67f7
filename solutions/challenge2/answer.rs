//! Challenge 2 — a reference solution.

use grading::given::{batch_bytes, bottom_of_backward, top_of_backward};
use grading::{Opt, Setup};

// ANCHOR: parameter_count
/// Weights and biases of a network `inputs → layers × width → classes`,
/// `layers ≥ 1` (the grader never asks for 0 hidden layers).
pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
    // A dense layer from n to m features: n × m weights and m biases.
    let dense = |n: u64, m: u64| n * m + m;
    dense(inputs, width) + (layers - 1) * dense(width, width) + dense(width, classes)
}
// ANCHOR_END: parameter_count

// ANCHOR: model_bytes
/// `P`, in bytes.
fn parameter_bytes(s: Setup) -> u64 {
    parameter_count(s.inputs, s.width, s.layers, s.classes) * 4
}

/// `P + S`: the parameters and the optimizer's state, in bytes.
pub fn model_bytes(setup: Setup) -> u64 {
    let copies = match setup.optimizer {
        Opt::Sgd => 1,
        Opt::Adam => 3,
    };
    copies * parameter_bytes(setup)
}
// ANCHOR_END: model_bytes

// ANCHOR: update
/// The update: `P + R` (`R`: Adam's square roots).
pub fn update(setup: Setup) -> u64 {
    let roots = match setup.optimizer {
        Opt::Sgd => 0,
        Opt::Adam => parameter_bytes(setup),
    };
    parameter_bytes(setup) + roots
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
