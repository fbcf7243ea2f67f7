//! The memory equation of the page "What lives in GPU memory", term by term, for the parts an
//! exercise gives its learner: Challenge 1's `fits` takes the model's terms from here (the
//! learner writes most of them in Challenge 2), Challenge 2's `deepest_fit` the batch's
//! (written in Challenge 1) and the bottom of the backward pass (given in both, to keep each
//! exercise to three functions). No grader compares an answer with these: every expected
//! value is measured by the engine.
//!
//! `peak = P + S + D + max(L·a + 2·a + G, P + 3·a, P + R)`, every value float32 (4 bytes) but
//! the int64 labels.

use crate::{Opt, Setup};

/// Bytes of a dense layer from `n` to `m` features: `n × m` weights and `m` biases.
fn dense(n: u64, m: u64) -> u64 {
    (n * m + m) * 4
}

/// `P`: every weight and bias (the gradients take as much).
pub fn parameter_bytes(s: Setup) -> u64 {
    dense(s.inputs, s.width)
        + s.layers.saturating_sub(1) * dense(s.width, s.width)
        + dense(s.width, s.classes)
}

/// `P + S`: the parameters and the optimizer's state (Adam: two running averages per
/// parameter), alive the whole step.
pub fn model_bytes(s: Setup) -> u64 {
    let p = parameter_bytes(s);
    match s.optimizer {
        Opt::Sgd => p,
        Opt::Adam => 3 * p,
    }
}

/// `D`: the batch — per row its float32 features, its int64 label and the loop's `y_pred`
/// (a float32 score per class).
pub fn batch_bytes(s: Setup) -> u64 {
    s.batch * (4 * s.inputs + 8 + 4 * s.classes)
}

/// `a`: one hidden layer's output, batch × width float32 values.
pub fn activation_bytes(s: Setup) -> u64 {
    4 * s.batch * s.width
}

/// The top of the backward pass, `L·a + 2·a + G`: every kept activation, two batch × width
/// gradients beside them and the output layer's gradients.
pub fn top_of_backward(s: Setup) -> u64 {
    (s.layers + 2) * activation_bytes(s) + dense(s.width, s.classes)
}

/// The bottom of the backward pass, `P + 3·a`: every gradient beside three batch × width
/// tensors.
pub fn bottom_of_backward(s: Setup) -> u64 {
    parameter_bytes(s) + 3 * activation_bytes(s)
}

/// The update, `P + R`: every gradient and, for `foreach` Adam, square roots as large as
/// the parameters.
pub fn update(s: Setup) -> u64 {
    let p = parameter_bytes(s);
    match s.optimizer {
        Opt::Sgd => p,
        Opt::Adam => 2 * p,
    }
}
