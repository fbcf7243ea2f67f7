//! Challenge 4 — a reference solution.
#![allow(unused_imports)]

use grading::challenge4::{Checkpointing, Precision, Settings};
use grading::{Opt, Setup};

// ANCHOR: peak_bytes
/// Bytes in use at the busiest moment of one optimizer update of `setup`
/// run with `settings` (before the allocator's rounding).
pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
    match (settings.precision, settings.checkpointing) {
        (Precision::Float32, Checkpointing::Off) => core(setup, settings),
        // Going further: float64, checkpointing, mixed precision, together.
        _ => going_further(setup, settings),
    }
}
// ANCHOR_END: peak_bytes

// ANCHOR: core
/// The core: float32, no checkpointing, the whole batch at once or in
/// micro-batches — Challenge 1's equation with two changes.
pub fn core(setup: Setup, settings: Settings) -> u64 {
    let Setup {
        inputs,
        width,
        layers,
        classes,
        batch,
        optimizer,
    } = setup;
    // As in Challenge 1: the first layer's weights and biases, a hidden-to-
    // hidden layer's, the output layer's; Adam's state and its square roots.
    let first = (inputs + 1) * width * 4;
    let hidden = (width + 1) * width * 4;
    let output = (width + 1) * classes * 4;
    let parameters = first + (layers - 1) * hidden + output;
    let (state, update_temporaries) = match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (2 * parameters, parameters),
    };
    // Change 1: one micro-batch is computed at a time. Its activations and
    // `y_pred` have `micro_batch` rows; the batch itself stays whole (the
    // micro-batches are slices of it).
    let rows = settings.micro_batch;
    let batch_bytes = batch * (inputs * 4 + 8) + rows * classes * 4;
    let activation = rows * width * 4;
    // Change 2: from the second micro-batch on, every gradient exists (it
    // is being added to), at the top of the backward pass too, and each
    // new weight gradient is made beside it before it is added.
    let accumulating = settings.accumulation_steps > 1;
    // The top of the backward pass: the kept activations, the gradient
    // coming down and the ReLU's gradient, then the top hidden layer's
    // weight gradient beside one of them.
    let made_at_top = if layers > 1 { hidden } else { first };
    let top_of_backward = if accumulating { parameters } else { output }
        + (layers + 1) * activation
        + activation.max(made_at_top);
    // Near the bottom, at hidden layer 1: the gradients of the layers above
    // it (every one, when accumulating) and three activations, then its
    // weight gradient beside them.
    let bottom_of_backward = if layers > 1 {
        let above = if accumulating {
            parameters
        } else {
            parameters - first - hidden
        };
        above + 3 * activation + activation.max(hidden)
    } else {
        0
    };
    // The update: every gradient, and Adam's square roots.
    let update = parameters + update_temporaries;
    let busiest = top_of_backward.max(bottom_of_backward).max(update);
    parameters + state + batch_bytes + busiest
}
// ANCHOR_END: core

// ANCHOR: going_further
/// Going further: each strategy's effect on the terms, at the step's
/// candidate busiest moments.
fn going_further(setup: Setup, settings: Settings) -> u64 {
    let Setup {
        inputs,
        width,
        layers,
        classes,
        batch,
        optimizer,
    } = setup;
    let mixed = settings.precision == Precision::Mixed;
    // Bytes per value of the parameters (with their gradients, optimizer
    // state and the features) and of the activations (with their
    // gradients). Mixed precision shrinks only the activations: the
    // master weights, their gradients and Adam's state stay float32.
    let (param, act) = match settings.precision {
        Precision::Float32 => (4, 4),
        Precision::Mixed => (4, 2),
        Precision::Float64 => (8, 8),
    };
    // One layer's weights and biases: the first, a hidden-to-hidden one,
    // the output layer.
    let first = (inputs + 1) * width * param;
    let hidden = (width + 1) * width * param;
    let output = (width + 1) * classes * param;
    let parameters = first + (layers - 1) * hidden + output;
    // Adam: two running averages, and square roots as large as the
    // parameters in its update.
    let (state, update_temporaries) = match optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (2 * parameters, parameters),
    };
    // Alive the whole update: the parameters, Adam's state, the whole
    // batch (micro-batches are slices of it: float features, int64
    // labels) and the loop's `y_pred`.
    let rows = settings.micro_batch;
    let features = batch * (inputs * param + 8);
    let always = parameters + state + features + rows * classes * act;
    let activation = rows * width * act;

    // Checkpointing: n segments of g hidden layers, the last one `last`
    // layers long.
    let g = match settings.checkpointing {
        Checkpointing::Off => layers,
        Checkpointing::Every(k) | Checkpointing::Each(k) => k.clamp(1, layers),
        Checkpointing::Sqrt => (layers as f64).sqrt().ceil() as u64,
    };
    let n = layers.div_ceil(g);
    let last = layers - (n - 1) * g;
    // Gradients alive: with accumulation, all of them from the second
    // micro-batch on; else those of the layers above the one the backward
    // pass is at (`made`).
    let gradients = |made: u64| {
        if settings.accumulation_steps > 1 {
            parameters
        } else {
            made
        }
    };
    // Autocast's float16 copies of `count` hidden layers' weights, saved
    // for the backward pass.
    let copies = |count: u64| if mixed { count * hidden / 2 } else { 0 };
    // The backward pass at hidden layer `layer`: `held` batch × width
    // tensors at its ReLU (kept activations, the gradient coming down,
    // the ReLU's gradient), then its weight gradient beside one fewer
    // (under mixed precision: made in float16, then copied to float32
    // once the layer has let go of its input — which frees that input too
    // if the layer opens its segment).
    let backward_at = |held: u64, made: u64, layer: u64, saved: u64, opens: bool| {
        let w = if layer == 0 { first } else { hidden };
        let tensors = if mixed {
            let freed = 2 + u64::from(opens);
            (held * activation)
                .max((held - 1) * activation + w / 2)
                .max((held - freed) * activation + w)
        } else {
            (held * activation).max((held - 1) * activation + w)
        };
        gradients(made) + saved + tensors
    };
    let hidden_in = |from: u64, to: u64| to.saturating_sub(from.max(1));
    // The top of the backward pass: one kept input per earlier segment,
    // the last segment's activations, two gradients.
    let mut busiest = backward_at(
        n + 1 + last,
        output,
        layers - 1,
        copies(hidden_in((n - 1) * g, layers)),
        n > 1 && last == 1,
    );
    if n > 1 {
        // A checkpointed segment is recomputed whole: the highest full
        // one (with the kept inputs below it) and the lowest (with the
        // gradients of every layer above it).
        let top = backward_at(
            n + g,
            output + last * hidden,
            (n - 1) * g - 1,
            copies(hidden_in((n - 2) * g, (n - 1) * g)),
            g == 1,
        );
        let bottom = backward_at(
            g + 2,
            parameters - first - (g - 1) * hidden,
            g - 1,
            copies(g - 1),
            g == 1,
        );
        busiest = busiest.max(top).max(bottom);
    }
    if layers > 1 {
        // Near the bottom of the backward pass, at layer 1: the gradients
        // of every layer above it exist.
        let above = parameters - first - hidden;
        let bottom = backward_at(4, above, 1, copies(1), g == 1);
        busiest = busiest.max(bottom);
    }
    if mixed {
        // The end of the forward pass: autocast's cache holds a float16
        // copy of every parameter; a checkpointed last segment holds only
        // its running activations.
        let held = match settings.checkpointing {
            Checkpointing::Each(_) if last > 1 => n + 2,
            Checkpointing::Each(_) => n + 1,
            _ => n + last,
        };
        busiest = busiest.max(gradients(0) + held * activation + parameters / 2);
    }
    // The update: every gradient, and Adam's square roots.
    busiest = busiest.max(parameters + update_temporaries);
    always + busiest
}
// ANCHOR_END: going_further

// ANCHOR: choose_settings
/// Going further 5: settings that make one update of `setup` fit a card of `card_bytes`
/// without changing its batch, using no strategy that is not needed.
pub fn choose_settings(setup: Setup, card_bytes: u64) -> Settings {
    // Keep 5 % of the card for the allocator's rounding.
    let budget = card_bytes / 100 * 95;
    // Cheapest first: the fewest micro-batches; at each count, nothing recomputed before
    // checkpointing, and float32 before mixed precision.
    let families = [
        (Precision::Float32, Checkpointing::Off),
        (Precision::Mixed, Checkpointing::Off),
        (Precision::Float32, Checkpointing::Sqrt),
        (Precision::Mixed, Checkpointing::Sqrt),
    ];
    for steps in 1..=setup.batch {
        for (precision, checkpointing) in families {
            let settings = Settings {
                precision,
                micro_batch: setup.batch.div_ceil(steps),
                accumulation_steps: steps,
                checkpointing,
            };
            if peak_bytes(setup, settings) <= budget {
                return settings;
            }
        }
    }
    // Not even one row at a time fits: the model itself is too large for this card.
    Settings::plain(setup.batch)
}
// ANCHOR_END: choose_settings

// ANCHOR: loss_scale
/// The factor micro-batch number `index` (0 is the first) multiplies its
/// mean loss by, when `batch` rows are split into `accumulation_steps`
/// micro-batches the engine's way, so that the gradients they add up to are
/// the whole batch's mean gradient.
pub fn loss_scale(batch: u64, accumulation_steps: u64, index: u64) -> f64 {
    // The engine's split: the first `batch % accumulation_steps`
    // micro-batches take one row more than the others.
    let k = accumulation_steps;
    let rows = batch / k + u64::from(index < batch % k);
    // The batch's mean is Σ rows_i · mean_i / batch: each micro-batch weighs
    // its share of the rows. `1 / accumulation_steps` is that share only when
    // every micro-batch is as long.
    rows as f64 / batch as f64
}
// ANCHOR_END: loss_scale
