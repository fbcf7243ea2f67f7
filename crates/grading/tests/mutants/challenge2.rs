//! Challenge 2's reference solution, rewritten once with a knob per one-edit mistake: a
//! layer or a bias forgotten, a copy of the parameters more or less in a piece, and edits of
//! the given `deepest_fit` (a given term dropped among them).

use grading::challenge2::Answers;
use grading::given;
use grading::{Opt, Setup};

// One edit each (`M`), every edit but `None` (`ALL`) and each edit's answers (`variants`).
mutations!(
    InputBiasOff,
    HiddenBiasOff,
    OutputBiasOff,
    OutputLayerOff,
    InputLayerOff,
    HiddenLayersOneMore,
    ModelWithGradients,
    ModelAdamOneCopy,
    ModelAdamThreeCopies,
    ModelStateOff,
    ModelBits,
    UpdateNoRoots,
    UpdateRootsTwice,
    UpdateRootsForSgd,
    UpdateGradientsOff,
    DeepLessThan,
    DeepMinForMax,
    DeepSumOfMoments,
    DeepNoTop,
    DeepNoBottom,
    DeepBatchOff,
    DeepModelOff,
    DeepOneLayerMore,
    DeepOneLayerLess
);

/// `<` for `<=`: they differ only on a card of exactly the equation's count (see
/// Challenge 1's).
pub const EQUIVALENT: &[M] = &[M::DeepLessThan];

/// Edits the grader does not catch: none since each piece is compared with the engine's
/// tensors byte for byte.
pub const STILL_MISSED: &[M] = &[];

/// `x` when the edit is `m`, else `y`.
fn pick<T>(edit: u8, m: M, x: T, y: T) -> T {
    if edit == m as u8 { x } else { y }
}

fn parameter_count<const E: u8>(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let dense = |n: u64, m: u64, off: M| n * m + if on(off) { 0 } else { m };
    let first = pick(
        E,
        M::InputLayerOff,
        0,
        dense(inputs, width, M::InputBiasOff),
    );
    let hidden =
        pick(E, M::HiddenLayersOneMore, layers, layers - 1) * dense(width, width, M::HiddenBiasOff);
    let output = pick(
        E,
        M::OutputLayerOff,
        0,
        dense(width, classes, M::OutputBiasOff),
    );
    first + hidden + output
}

fn p<const E: u8>(s: Setup) -> u64 {
    parameter_count::<E>(s.inputs, s.width, s.layers, s.classes) * 4
}

fn model_bytes<const E: u8>(s: Setup) -> u64 {
    let state = match s.optimizer {
        Opt::Sgd => 0,
        Opt::Adam => pick(
            E,
            M::ModelAdamOneCopy,
            1,
            pick(E, M::ModelAdamThreeCopies, 3, 2),
        ),
    };
    let state = pick(E, M::ModelStateOff, 0, state);
    let copies = 1 + state + pick(E, M::ModelWithGradients, 1, 0);
    copies * p::<E>(s) * pick(E, M::ModelBits, 8, 1)
}

fn update<const E: u8>(s: Setup) -> u64 {
    let roots = match s.optimizer {
        Opt::Sgd => pick(E, M::UpdateRootsForSgd, 1, 0),
        Opt::Adam => pick(E, M::UpdateNoRoots, 0, pick(E, M::UpdateRootsTwice, 2, 1)),
    };
    pick(E, M::UpdateGradientsOff, 0, p::<E>(s)) + roots * p::<E>(s)
}

fn deepest_fit<const E: u8>(setup: Setup, card_bytes: u64) -> u64 {
    let fits = |layers: u64| {
        let s = Setup { layers, ..setup };
        let top = pick(E, M::DeepNoTop, 0, given::top_of_backward(s));
        let bottom = pick(E, M::DeepNoBottom, 0, given::bottom_of_backward(s));
        let update = update::<E>(s);
        let busiest = if E == M::DeepMinForMax as u8 {
            top.min(bottom).max(update)
        } else if E == M::DeepSumOfMoments as u8 {
            top + bottom + update
        } else {
            top.max(bottom).max(update)
        };
        let need = pick(E, M::DeepModelOff, 0, model_bytes::<E>(s))
            + pick(E, M::DeepBatchOff, 0, given::batch_bytes(s))
            + busiest;
        if E == M::DeepLessThan as u8 {
            need < card_bytes
        } else {
            need <= card_bytes
        }
    };
    let mut layers = 0;
    // The search stops at the engine's deepest network, 4096 layers.
    while layers < 4096 && fits(layers + 1) {
        layers += 1;
    }
    pick(
        E,
        M::DeepOneLayerMore,
        layers + 1,
        pick(E, M::DeepOneLayerLess, layers.saturating_sub(1), layers),
    )
}

/// The answers with edit `E`.
fn answers<const E: u8>() -> Answers {
    Answers {
        parameter_count: parameter_count::<E>,
        model_bytes: model_bytes::<E>,
        update: update::<E>,
        deepest_fit: deepest_fit::<E>,
    }
}
