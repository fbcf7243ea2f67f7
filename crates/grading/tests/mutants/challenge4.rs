//! Challenge 4's reference solution, its core and `loss_scale` rewritten once with a knob per
//! one-edit mistake (the going-further parts and `choose_settings` are the reference's).

use grading::challenge4::{Answers, Checkpointing, Precision, Settings};
use grading::{Opt, Setup};

#[path = "../../../../solutions/challenge4/answer.rs"]
#[allow(dead_code)]
mod solution;

/// One edit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum M {
    None,
    InputBiasOff,
    HiddenBiasOff,
    OutputBiasOff,
    OutputLayerOff,
    HiddenLayersOneMore,
    AdamStateOneCopy,
    NoSquareRoots,
    Labels4,
    Labels16,
    FeaturesOff,
    FeaturesMicroBatch,
    YPredOff,
    YPredWholeBatch,
    BatchOff,
    ActivationWholeBatch,
    NotAccumulating,
    AlwaysAccumulating,
    TopOneLess,
    TopOneMore,
    TopMadeOff,
    TopMadeFirstLayer,
    TopOutputOff,
    BottomOneLess,
    BottomOneMore,
    BottomAboveEverything,
    BottomMadeOff,
    NoBottom,
    NoTop,
    UpdateGradientsOff,
    MinForMax,
    ParametersOff,
    StateOff,
    GradientsWithActivations,
    LossOneOverK,
    LossFloorRows,
    LossLessEqual,
}

/// Every edit but `None`.
pub const ALL: [M; 36] = {
    use M::*;
    [
        InputBiasOff,
        HiddenBiasOff,
        OutputBiasOff,
        OutputLayerOff,
        HiddenLayersOneMore,
        AdamStateOneCopy,
        NoSquareRoots,
        Labels4,
        Labels16,
        FeaturesOff,
        FeaturesMicroBatch,
        YPredOff,
        YPredWholeBatch,
        BatchOff,
        ActivationWholeBatch,
        NotAccumulating,
        AlwaysAccumulating,
        TopOneLess,
        TopOneMore,
        TopMadeOff,
        TopMadeFirstLayer,
        TopOutputOff,
        BottomOneLess,
        BottomOneMore,
        BottomAboveEverything,
        BottomMadeOff,
        NoBottom,
        NoTop,
        UpdateGradientsOff,
        MinForMax,
        ParametersOff,
        StateOff,
        GradientsWithActivations,
        LossOneOverK,
        LossFloorRows,
        LossLessEqual,
    ]
};

/// No edit is equivalent.
pub const EQUIVALENT: &[M] = &[];

/// Edits the grader does not catch: the output layer's gradients at the top of the backward
/// pass are (width + 1) × classes values, more than the 1 % tolerance only in tiny networks
/// whose top is the busiest moment (SGD at a row or two), where the engine's loss tensors put
/// the reference itself 6 % off (measured at width 8).
pub const STILL_MISSED: &[M] = &[M::TopOutputOff];

fn peak_bytes<const E: u8>(setup: Setup, settings: Settings) -> u64 {
    match (settings.precision, settings.checkpointing) {
        (Precision::Float32, Checkpointing::Off) => core::<E>(setup, settings),
        _ => solution::peak_bytes(setup, settings),
    }
}

fn core<const E: u8>(setup: Setup, settings: Settings) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let Setup {
        inputs,
        width,
        layers,
        classes,
        batch,
        optimizer,
    } = setup;
    let first = (inputs + u64::from(!on(M::InputBiasOff))) * width * 4;
    let hidden = (width + u64::from(!on(M::HiddenBiasOff))) * width * 4;
    let output = off(
        M::OutputLayerOff,
        (width + u64::from(!on(M::OutputBiasOff))) * classes * 4,
    );
    let hidden_layers = if on(M::HiddenLayersOneMore) {
        layers
    } else {
        layers - 1
    };
    let parameters = first + hidden_layers * hidden + output;
    let (state, update_temporaries) = match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (
            if on(M::AdamStateOneCopy) {
                parameters
            } else {
                2 * parameters
            },
            off(M::NoSquareRoots, parameters),
        ),
    };
    let rows = settings.micro_batch;
    let label = if on(M::Labels4) {
        4
    } else if on(M::Labels16) {
        16
    } else {
        8
    };
    let feature_rows = if on(M::FeaturesMicroBatch) {
        rows
    } else {
        batch
    };
    let y_rows = if on(M::YPredWholeBatch) { batch } else { rows };
    let batch_bytes = off(
        M::BatchOff,
        feature_rows * off(M::FeaturesOff, inputs * 4)
            + batch * label
            + off(M::YPredOff, y_rows * classes * 4),
    );
    let activation = if on(M::ActivationWholeBatch) {
        batch
    } else {
        rows
    } * width
        * 4;
    let accumulating = if on(M::NotAccumulating) {
        false
    } else {
        on(M::AlwaysAccumulating) || settings.accumulation_steps > 1
    };
    let made_at_top = if layers > 1 && !on(M::TopMadeFirstLayer) {
        hidden
    } else {
        first
    };
    let kept = if on(M::TopOneLess) {
        layers
    } else if on(M::TopOneMore) {
        layers + 2
    } else {
        layers + 1
    };
    let top_gradients = if accumulating || on(M::GradientsWithActivations) {
        parameters
    } else {
        off(M::TopOutputOff, output)
    };
    let top = top_gradients
        + kept * activation
        + if on(M::TopMadeOff) {
            activation
        } else {
            activation.max(made_at_top)
        };
    let bottom = if layers > 1 {
        let above = if accumulating || on(M::BottomAboveEverything) {
            parameters
        } else {
            parameters - first - hidden
        };
        let three = if on(M::BottomOneLess) {
            2
        } else if on(M::BottomOneMore) {
            4
        } else {
            3
        };
        above
            + three * activation
            + if on(M::BottomMadeOff) {
                activation
            } else {
                activation.max(hidden)
            }
    } else {
        0
    };
    let update = off(M::UpdateGradientsOff, parameters) + update_temporaries;
    let (top, bottom) = (off(M::NoTop, top), off(M::NoBottom, bottom));
    let busiest = if on(M::MinForMax) {
        top.min(bottom).max(update)
    } else {
        top.max(bottom).max(update)
    };
    off(M::ParametersOff, parameters) + off(M::StateOff, state) + batch_bytes + busiest
}

fn loss_scale<const E: u8>(batch: u64, accumulation_steps: u64, index: u64) -> f64 {
    let on = |m: M| E == m as u8;
    let k = accumulation_steps;
    if on(M::LossOneOverK) {
        return 1.0 / k as f64;
    }
    let extra = if on(M::LossFloorRows) {
        false
    } else if on(M::LossLessEqual) {
        index <= batch % k
    } else {
        index < batch % k
    };
    (batch / k + u64::from(extra)) as f64 / batch as f64
}

/// The answers with edit `E`.
fn answers<const E: u8>() -> Answers {
    Answers {
        peak_bytes: peak_bytes::<E>,
        choose_settings: solution::choose_settings,
        loss_scale: loss_scale::<E>,
    }
}

/// Each edit's answers.
pub fn variants() -> Vec<(M, Answers)> {
    macro_rules! each {
        ($($m:ident),*) => { vec![$((M::$m, answers::<{ M::$m as u8 }>())),*] };
    }
    each!(
        None,
        InputBiasOff,
        HiddenBiasOff,
        OutputBiasOff,
        OutputLayerOff,
        HiddenLayersOneMore,
        AdamStateOneCopy,
        NoSquareRoots,
        Labels4,
        Labels16,
        FeaturesOff,
        FeaturesMicroBatch,
        YPredOff,
        YPredWholeBatch,
        BatchOff,
        ActivationWholeBatch,
        NotAccumulating,
        AlwaysAccumulating,
        TopOneLess,
        TopOneMore,
        TopMadeOff,
        TopMadeFirstLayer,
        TopOutputOff,
        BottomOneLess,
        BottomOneMore,
        BottomAboveEverything,
        BottomMadeOff,
        NoBottom,
        NoTop,
        UpdateGradientsOff,
        MinForMax,
        ParametersOff,
        StateOff,
        GradientsWithActivations,
        LossOneOverK,
        LossFloorRows,
        LossLessEqual
    )
}
