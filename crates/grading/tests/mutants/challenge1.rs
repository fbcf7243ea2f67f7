//! Challenge 1's reference solution, rewritten once with a knob per one-edit mistake: a
//! term dropped or counted twice, a bias or a layer forgotten, one activation more or less
//! at a moment, a byte more or less per label, `<` for `<=`, `min` for `max`.

use grading::challenge1::Answers;
use grading::{Opt, Setup};

// One edit each (`M`), every edit but `None` (`ALL`) and each edit's answers (`variants`).
mutations!(
    ActivationBits,
    ActivationNoBatch,
    ActivationEightBytes,
    StoredOneLess,
    StoredOneMore,
    InputBiasOff,
    HiddenBiasOff,
    OutputBiasOff,
    OutputLayerOff,
    InputLayerOff,
    HiddenLayersOneMore,
    AdamStateOneCopy,
    AdamStateThreeCopies,
    NoSquareRoots,
    SquareRootsTwice,
    Labels4,
    Labels0,
    Labels16,
    FeaturesOff,
    YPredOff,
    YPredTwice,
    BatchOff,
    TopOneActivationLess,
    TopOneActivationMore,
    TopOneGradientLess,
    TopOneGradientMore,
    TopOutputGradientOff,
    BottomOneLess,
    BottomOneMore,
    BottomGradientsOff,
    UpdateGradientsOff,
    NoTop,
    NoBottom,
    NoUpdate,
    LessThan,
    MinForMax,
    ParametersOff,
    StateOff,
    GradientsWithActivations,
    SumOfMoments,
    TopOutputBiasOff,
    NoGradientsAnywhere
);

/// `<` for `<=`: the two differ only on a card of exactly the equation's count, and the
/// engine decides that card by what its plan requests, a few bytes more or less than the
/// page's equation (4 under it to 60 KiB over it, measured): no card makes the reference
/// right and `<` wrong.
pub const EQUIVALENT: &[M] = &[M::LessThan];

/// Edits the grader does not catch. 16-byte labels and `y_pred` counted twice count 8 bytes
/// a row too many: a `fits` case catches that only on a card between the engine's requested
/// and reserved peaks plus 8 bytes a row, and on every narrow setup searched at 10 million
/// rows (width 3 to 16, 2 to 8 inputs, 2 or 4 classes, 1 or 2 layers) where the reference is
/// right to the byte, the allocator's rounding and fragmentation are 24.8 to 57 bytes a row
/// (where they are 1.3, at 4 classes and width 4, the reference is 16 bytes a row under the
/// engine). The output bias left out of the top of the backward pass is 8 bytes, as much as
/// the reference is under the engine where the top decides.
pub const STILL_MISSED: &[M] = {
    use M::*;
    &[Labels16, YPredTwice, TopOutputBiasOff]
};

/// `x` when the edit is `m`, else `y`.
fn pick<T>(edit: u8, m: M, x: T, y: T) -> T {
    if edit == m as u8 { x } else { y }
}

fn activation_bytes<const E: u8>(batch: u64, width: u64) -> u64 {
    let batch = pick(E, M::ActivationNoBatch, 1, batch);
    let bytes = pick(
        E,
        M::ActivationBits,
        32,
        pick(E, M::ActivationEightBytes, 8, 4),
    );
    batch * width * bytes
}

fn stored_activation_bytes<const E: u8>(batch: u64, width: u64, layers: u64) -> u64 {
    let layers = pick(
        E,
        M::StoredOneLess,
        layers - 1,
        pick(E, M::StoredOneMore, layers + 1, layers),
    );
    layers * activation_bytes::<E>(batch, width)
}

fn fits<const E: u8>(setup: Setup, card_bytes: u64) -> bool {
    let on = |m: M| E == m as u8;
    let Setup {
        inputs,
        width,
        layers,
        classes,
        batch,
        optimizer,
    } = setup;
    let bias = |m: M| u64::from(!on(m));
    let first = if on(M::InputLayerOff) {
        0
    } else {
        (inputs + bias(M::InputBiasOff)) * width
    };
    let hidden_layers = if on(M::HiddenLayersOneMore) {
        layers
    } else {
        layers - 1
    };
    let output = if on(M::OutputLayerOff) {
        0
    } else {
        (width + bias(M::OutputBiasOff)) * classes
    };
    let parameters =
        (first + hidden_layers * (width + bias(M::HiddenBiasOff)) * width + output) * 4;
    let (state, update_temporaries) = match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (
            pick(
                E,
                M::AdamStateOneCopy,
                1,
                pick(E, M::AdamStateThreeCopies, 3, 2),
            ) * parameters,
            pick(E, M::NoSquareRoots, 0, pick(E, M::SquareRootsTwice, 2, 1)) * parameters,
        ),
    };
    let label = pick(
        E,
        M::Labels4,
        4,
        pick(E, M::Labels0, 0, pick(E, M::Labels16, 16, 8)),
    );
    let features = pick(E, M::FeaturesOff, 0, inputs * 4);
    let y_pred = pick(E, M::YPredOff, 0, pick(E, M::YPredTwice, 2, 1)) * batch * classes * 4;
    let batch_bytes = pick(E, M::BatchOff, 0, batch * (features + label) + y_pred);
    let activation = activation_bytes::<E>(batch, width);
    let kept = stored_activation_bytes::<E>(batch, width, layers);
    let kept = pick(E, M::TopOneActivationLess, kept - activation, kept);
    let kept = pick(E, M::TopOneActivationMore, kept + activation, kept);
    let in_flight = pick(
        E,
        M::TopOneGradientLess,
        1,
        pick(E, M::TopOneGradientMore, 3, 2),
    );
    let output_bias = u64::from(!on(M::TopOutputBiasOff));
    let output_gradient = pick(
        E,
        M::TopOutputGradientOff,
        0,
        (width + output_bias) * classes * 4,
    );
    let gradients_beside = pick(E, M::GradientsWithActivations, parameters, 0);
    let top = kept + in_flight * activation + output_gradient + gradients_beside;
    let gradients = pick(E, M::NoGradientsAnywhere, 0, parameters);
    let bottom_acts = pick(E, M::BottomOneLess, 2, pick(E, M::BottomOneMore, 4, 3));
    let bottom = pick(E, M::BottomGradientsOff, 0, gradients) + bottom_acts * activation;
    let update = pick(E, M::UpdateGradientsOff, 0, gradients) + update_temporaries;
    let top = pick(E, M::NoTop, 0, top);
    let bottom = pick(E, M::NoBottom, 0, bottom);
    let update = pick(E, M::NoUpdate, 0, update);
    let busiest = if on(M::MinForMax) {
        top.min(bottom).max(update)
    } else if on(M::SumOfMoments) {
        top + bottom + update
    } else {
        top.max(bottom).max(update)
    };
    let always = pick(E, M::ParametersOff, 0, parameters) + pick(E, M::StateOff, 0, state);
    let need = always + batch_bytes + busiest;
    if on(M::LessThan) {
        need < card_bytes
    } else {
        need <= card_bytes
    }
}

/// The answers with edit `E`.
fn answers<const E: u8>() -> Answers {
    Answers {
        activation_bytes: activation_bytes::<E>,
        stored_activation_bytes: stored_activation_bytes::<E>,
        fits: fits::<E>,
    }
}
