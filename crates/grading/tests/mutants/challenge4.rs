//! Challenge 4's reference solution rewritten once with a knob per one-edit mistake: its core,
//! the going-further parts, `choose_settings` (on the edit's own equation) and `loss_scale`.

use grading::challenge4::{Answers, Checkpointing, Precision, Settings};
use grading::{Opt, Setup};

#[path = "../../../../solutions/challenge4/answer.rs"]
#[allow(dead_code)]
mod solution;

// One edit each (`M`), every edit but `None` (`ALL`) and each edit's answers (`variants`).
mutations!(
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
    // Going further: float64, checkpointing, mixed precision.
    F64ParamFour,
    F64ActFour,
    F64FeaturesFour,
    MixedParamHalf,
    MixedActFour,
    MixedFeaturesHalf,
    MixedYPredFour,
    CopiesOff,
    CopiesWhole,
    CastCacheOff,
    CastCacheWhole,
    MadeHalfOnly,
    FreedOneLess,
    SqrtFloor,
    SegmentsFloor,
    CkptTopOneLess,
    CkptTopOneMore,
    CkptHighestOff,
    CkptLowestOff,
    CkptLowestOneLess,
    CkptHighestOneLess,
    FurtherNotAccumulating,
    FurtherBottomOff,
    FurtherUpdateOff,
    FurtherStateOneCopy,
    // choose_settings.
    ChooseBudgetWhole,
    ChooseBudget90,
    ChooseCheckpointBeforeMixed,
    ChooseFloorRows,
    ChooseFromTwoSteps,
    ChooseLessThan,
    ChooseNoMixed,
    ChooseNoCheckpointing,
);

/// `<` for `<=` against the 95 % line changes a choice only when an equation lands on the
/// line to the byte, which no case the grader asks does (its cases keep every candidate 1 % of
/// the card from the line).
pub const EQUIVALENT: &[M] = &[M::ChooseLessThan];

/// Edits the grader does not catch: the output layer's gradients at the top of the backward
/// pass are (width + 1) × classes values, more than the 1 % tolerance only in tiny networks
/// whose top is the busiest moment (SGD at a row or two), where the engine's loss tensors put
/// the reference itself 6 % off (measured at width 8).
///
/// Mixed precision's y_pred in float32 (4 bytes a row and class, not 2): the engine holds 12
/// bytes a micro-batch row more than the equation counts under mixed precision (autocast's
/// float16 copy of the input, the loss in float32: the reference is -24.0 % at width 3, one
/// layer, a million rows at once; -2.2 % in 32 micro-batches), more than y_pred's 4 bytes a row,
/// so wherever y_pred in float32 exceeds the 1 % the reference fails too.
///
/// `choose_settings` trying checkpointing before mixed precision: the rules switch each chosen
/// strategy off alone, and do not rank mixed precision against checkpointing at the same number
/// of micro-batches (both choices keep every strategy they switch on needed).
pub const STILL_MISSED: &[M] = &[
    M::TopOutputOff,
    M::MixedYPredFour,
    M::ChooseCheckpointBeforeMixed,
];

fn peak_bytes<const E: u8>(setup: Setup, settings: Settings) -> u64 {
    match (settings.precision, settings.checkpointing) {
        (Precision::Float32, Checkpointing::Off) => core::<E>(setup, settings),
        _ => going_further::<E>(setup, settings),
    }
}

fn core<const E: u8>(setup: Setup, settings: Settings) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let model = core_model::<E>(setup);
    let (state, update_temporaries) = core_state::<E>(setup.optimizer, model.parameters);
    let rows = settings.micro_batch;
    let activation = if on(M::ActivationWholeBatch) {
        setup.batch
    } else {
        rows
    } * setup.width
        * 4;
    let accumulating = if on(M::NotAccumulating) {
        false
    } else {
        on(M::AlwaysAccumulating) || settings.accumulation_steps > 1
    };
    let top = core_top::<E>(setup.layers, &model, activation, accumulating);
    let bottom = core_bottom::<E>(setup.layers, &model, activation, accumulating);
    let update = off(M::UpdateGradientsOff, model.parameters) + update_temporaries;
    let (top, bottom) = (off(M::NoTop, top), off(M::NoBottom, bottom));
    let busiest = if on(M::MinForMax) {
        top.min(bottom).max(update)
    } else {
        top.max(bottom).max(update)
    };
    off(M::ParametersOff, model.parameters)
        + off(M::StateOff, state)
        + core_batch::<E>(setup, rows)
        + busiest
}

/// The core's layers in bytes (float32), with the edits of its terms.
struct CoreModel {
    first: u64,
    hidden: u64,
    output: u64,
    parameters: u64,
}

fn core_model<const E: u8>(setup: Setup) -> CoreModel {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let Setup {
        inputs,
        width,
        layers,
        classes,
        ..
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
    CoreModel {
        first,
        hidden,
        output,
        parameters: first + hidden_layers * hidden + output,
    }
}

/// The optimizer's state and its update's temporaries (Adam's square roots).
fn core_state<const E: u8>(optimizer: Opt, parameters: u64) -> (u64, u64) {
    let on = |m: M| E == m as u8;
    match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (
            if on(M::AdamStateOneCopy) {
                parameters
            } else {
                2 * parameters
            },
            if on(M::NoSquareRoots) { 0 } else { parameters },
        ),
    }
}

/// The batch: features, labels and one micro-batch's y_pred of `rows` rows.
fn core_batch<const E: u8>(setup: Setup, rows: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let Setup {
        inputs,
        classes,
        batch,
        ..
    } = setup;
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
    off(
        M::BatchOff,
        feature_rows * off(M::FeaturesOff, inputs * 4)
            + batch * label
            + off(M::YPredOff, y_rows * classes * 4),
    )
}

/// The top of the backward pass: the gradients so far, the kept activations and what is made.
fn core_top<const E: u8>(
    layers: u64,
    model: &CoreModel,
    activation: u64,
    accumulating: bool,
) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let made_at_top = if layers > 1 && !on(M::TopMadeFirstLayer) {
        model.hidden
    } else {
        model.first
    };
    let kept = if on(M::TopOneLess) {
        layers
    } else if on(M::TopOneMore) {
        layers + 2
    } else {
        layers + 1
    };
    let top_gradients = if accumulating || on(M::GradientsWithActivations) {
        model.parameters
    } else {
        off(M::TopOutputOff, model.output)
    };
    top_gradients
        + kept * activation
        + if on(M::TopMadeOff) {
            activation
        } else {
            activation.max(made_at_top)
        }
}

/// The bottom of the backward pass, at hidden layer 1 (none with one hidden layer).
fn core_bottom<const E: u8>(
    layers: u64,
    model: &CoreModel,
    activation: u64,
    accumulating: bool,
) -> u64 {
    let on = |m: M| E == m as u8;
    if layers <= 1 {
        return 0;
    }
    let above = if accumulating || on(M::BottomAboveEverything) {
        model.parameters
    } else {
        model.parameters - model.first - model.hidden
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
            activation.max(model.hidden)
        }
}

/// The reference's going-further equation, with the edits of its terms.
fn going_further<const E: u8>(setup: Setup, settings: Settings) -> u64 {
    let on = |m: M| E == m as u8;
    let step = Further::<E>::new(setup, settings);
    let Setup {
        inputs,
        classes,
        batch,
        optimizer,
        ..
    } = setup;
    let parameters = step.parameters;
    let (state, update_temporaries) = match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam if on(M::FurtherStateOneCopy) => (parameters, parameters),
        Opt::Adam => (2 * parameters, parameters),
    };
    let feature_bytes = match settings.precision {
        Precision::Float64 if on(M::F64FeaturesFour) => 4,
        Precision::Mixed if on(M::MixedFeaturesHalf) => 2,
        _ => step.param,
    };
    let y_bytes = if step.mixed && on(M::MixedYPredFour) {
        4
    } else {
        step.act
    };
    let features = batch * (inputs * feature_bytes + 8);
    let always = parameters + state + features + settings.micro_batch * classes * y_bytes;
    let mut busiest = step.backward(setup.layers, settings.checkpointing);
    if !on(M::FurtherUpdateOff) {
        busiest = busiest.max(parameters + update_temporaries);
    }
    always + busiest
}

/// The going-further step's sizes in bytes, with the edits of its terms: what its moments in
/// the backward pass are made of.
struct Further<const E: u8> {
    mixed: bool,
    /// Bytes of a parameter and of an activation value.
    param: u64,
    act: u64,
    first: u64,
    hidden: u64,
    output: u64,
    parameters: u64,
    /// A micro-batch × width activation.
    activation: u64,
    accumulating: bool,
}

impl<const E: u8> Further<E> {
    fn on(m: M) -> bool {
        E == m as u8
    }

    fn new(setup: Setup, settings: Settings) -> Self {
        let on = Self::on;
        let Setup {
            inputs,
            width,
            layers,
            classes,
            ..
        } = setup;
        let (param, act) = match settings.precision {
            Precision::Float32 => (4, 4),
            Precision::Mixed => (
                if on(M::MixedParamHalf) { 2 } else { 4 },
                if on(M::MixedActFour) { 4 } else { 2 },
            ),
            Precision::Float64 => (
                if on(M::F64ParamFour) { 4 } else { 8 },
                if on(M::F64ActFour) { 4 } else { 8 },
            ),
        };
        let first = (inputs + 1) * width * param;
        let hidden = (width + 1) * width * param;
        let output = (width + 1) * classes * param;
        Further {
            mixed: settings.precision == Precision::Mixed,
            param,
            act,
            first,
            hidden,
            output,
            parameters: first + (layers - 1) * hidden + output,
            activation: settings.micro_batch * width * act,
            accumulating: settings.accumulation_steps > 1 && !on(M::FurtherNotAccumulating),
        }
    }

    fn gradients(&self, made: u64) -> u64 {
        if self.accumulating {
            self.parameters
        } else {
            made
        }
    }

    /// Autocast's float16 copies of `count` hidden layers' weights.
    fn copies(&self, count: u64) -> u64 {
        if !self.mixed || Self::on(M::CopiesOff) {
            0
        } else if Self::on(M::CopiesWhole) {
            count * self.hidden
        } else {
            count * self.hidden / 2
        }
    }

    /// The backward pass at `layer` holding `held` activations, the gradients `made` so far
    /// and `saved` copies; `opens` when the layer opens a segment.
    fn backward_at(&self, held: u64, made: u64, layer: u64, saved: u64, opens: bool) -> u64 {
        let on = Self::on;
        let activation = self.activation;
        let w = if layer == 0 { self.first } else { self.hidden };
        let tensors = if self.mixed {
            let freed = if on(M::FreedOneLess) { 1 } else { 2 } + u64::from(opens);
            let half = (held * activation).max((held - 1) * activation + w / 2);
            if on(M::MadeHalfOnly) {
                half
            } else {
                half.max(held.saturating_sub(freed) * activation + w)
            }
        } else {
            (held * activation).max((held - 1) * activation + w)
        };
        self.gradients(made) + saved + tensors
    }

    /// The busiest moment of the backward pass of `layers` hidden layers checkpointed as
    /// `checkpointing` (the update's is the caller's).
    fn backward(&self, layers: u64, checkpointing: Checkpointing) -> u64 {
        let on = Self::on;
        let (g, n, last) = segments::<E>(layers, checkpointing);
        // Checkpointing's kept inputs (one per earlier segment) at the top, one off.
        let kept_top = if on(M::CkptTopOneLess) && n > 1 {
            n + last
        } else if on(M::CkptTopOneMore) && n > 1 {
            n + 2 + last
        } else {
            n + 1 + last
        };
        let mut busiest = self.backward_at(
            kept_top,
            self.output,
            layers - 1,
            self.copies(hidden_in((n - 1) * g, layers)),
            n > 1 && last == 1,
        );
        if n > 1 {
            busiest = busiest.max(self.segment_edges(g, n, last));
        }
        if layers > 1 && !on(M::FurtherBottomOff) {
            let above = self.parameters - self.first - self.hidden;
            let bottom = self.backward_at(4, above, 1, self.copies(1), g == 1);
            busiest = busiest.max(bottom);
        }
        if self.mixed && !on(M::CastCacheOff) {
            let held = match checkpointing {
                Checkpointing::Each(_) if last > 1 => n + 2,
                Checkpointing::Each(_) => n + 1,
                _ => n + last,
            };
            let cache = if on(M::CastCacheWhole) {
                self.parameters
            } else {
                self.parameters / 2
            };
            busiest = busiest.max(self.gradients(0) + held * self.activation + cache);
        }
        busiest
    }

    /// With `n` > 1 segments of `g` layers (the last of `last`): the highest and the lowest
    /// checkpointed segment's recomputation, the larger (0 where an edit drops it).
    fn segment_edges(&self, g: u64, n: u64, last: u64) -> u64 {
        let on = Self::on;
        let top = self.backward_at(
            if on(M::CkptHighestOneLess) {
                n + g - 1
            } else {
                n + g
            },
            self.output + last * self.hidden,
            (n - 1) * g - 1,
            self.copies(hidden_in((n - 2) * g, (n - 1) * g)),
            g == 1,
        );
        let bottom = self.backward_at(
            if on(M::CkptLowestOneLess) {
                g + 1
            } else {
                g + 2
            },
            self.parameters - self.first - (g - 1) * self.hidden,
            g - 1,
            self.copies(g - 1),
            g == 1,
        );
        let top = if on(M::CkptHighestOff) { 0 } else { top };
        let bottom = if on(M::CkptLowestOff) { 0 } else { bottom };
        top.max(bottom)
    }
}

/// Hidden layers (from 1) among layers `from..to`.
fn hidden_in(from: u64, to: u64) -> u64 {
    to.saturating_sub(from.max(1))
}

/// Checkpointing's segments of `layers` hidden layers: layers a segment, segments, and the
/// last segment's layers.
fn segments<const E: u8>(layers: u64, checkpointing: Checkpointing) -> (u64, u64, u64) {
    let on = |m: M| E == m as u8;
    let g = match checkpointing {
        Checkpointing::Off => layers,
        Checkpointing::Every(k) | Checkpointing::Each(k) => k.clamp(1, layers),
        Checkpointing::Sqrt if on(M::SqrtFloor) => ((layers as f64).sqrt() as u64).max(1),
        Checkpointing::Sqrt => (layers as f64).sqrt().ceil() as u64,
    };
    let n = if on(M::SegmentsFloor) {
        (layers / g).max(1)
    } else {
        layers.div_ceil(g)
    };
    (g, n, layers - (n - 1) * g)
}

/// The reference's `choose_settings` on this edit's `peak_bytes`, with its own edits.
fn choose_settings<const E: u8>(setup: Setup, card_bytes: u64) -> Settings {
    let on = |m: M| E == m as u8;
    let budget = if on(M::ChooseBudgetWhole) {
        card_bytes
    } else if on(M::ChooseBudget90) {
        card_bytes / 100 * 90
    } else {
        card_bytes / 100 * 95
    };
    let mut families = vec![
        (Precision::Float32, Checkpointing::Off),
        (Precision::Mixed, Checkpointing::Off),
        (Precision::Float32, Checkpointing::Sqrt),
        (Precision::Mixed, Checkpointing::Sqrt),
    ];
    if on(M::ChooseCheckpointBeforeMixed) {
        families.swap(1, 2);
    }
    if on(M::ChooseNoMixed) {
        families.retain(|f| f.0 != Precision::Mixed);
    }
    if on(M::ChooseNoCheckpointing) {
        families.retain(|f| f.1 == Checkpointing::Off);
    }
    let first = if on(M::ChooseFromTwoSteps) { 2 } else { 1 };
    for steps in first..=setup.batch {
        for &(precision, checkpointing) in &families {
            let micro_batch = if on(M::ChooseFloorRows) {
                (setup.batch / steps).max(1)
            } else {
                setup.batch.div_ceil(steps)
            };
            let settings = Settings {
                precision,
                micro_batch,
                accumulation_steps: steps,
                checkpointing,
            };
            let peak = peak_bytes::<E>(setup, settings);
            let fits = if on(M::ChooseLessThan) {
                peak < budget
            } else {
                peak <= budget
            };
            if fits {
                return settings;
            }
        }
    }
    Settings::plain(setup.batch)
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
        choose_settings: choose_settings::<E>,
        loss_scale: loss_scale::<E>,
    }
}
