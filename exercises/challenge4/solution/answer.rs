//! Challenge 4 — a reference solution.
#![allow(unused_imports)]

use challenge4::grader::{Checkpointing, Precision, Settings};
use grading::{Opt, Setup};

// ANCHOR: peak_bytes
/// Bytes in use at the busiest moment of one optimizer update of `setup` run with
/// `settings` (before the allocator's rounding).
pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
    let Setup {
        inputs,
        width,
        layers,
        classes,
        optimizer,
        ..
    } = setup;
    // Bytes per value of the parameters (with their gradients and optimizer state), of the
    // activations, and of the data (features, logits). Mixed precision shrinks only the
    // activations: the master weights, their gradients and Adam's state stay float32.
    let (param, act, data) = match settings.precision {
        Precision::Float32 => (4, 4, 4),
        Precision::Mixed => (4, 2, 4),
        Precision::Float64 => (8, 8, 8),
    };
    let parameters =
        (inputs + 1) * width + (layers - 1) * (width + 1) * width + (width + 1) * classes;
    let copies = match optimizer {
        Opt::Sgd => 2,
        Opt::Adam => 4,
    };
    let model = parameters * copies * param;

    // Only one micro-batch is on the card at a time: the largest.
    let rows = settings.micro_batch;
    let batch_data = rows * (inputs * data + 4); // features, and a 4-byte label per row
    let activation = rows * width * act;
    // Activations held at the busiest moment. Without checkpointing: all `layers` kept for
    // the backward pass, plus one more being computed. With segments of g layers: one
    // checkpoint per segment, plus the g activations of the segment being recomputed.
    let g = match settings.checkpointing {
        Checkpointing::Off => layers,
        Checkpointing::Every(k) | Checkpointing::Each(k) => k.clamp(1, layers),
        Checkpointing::Sqrt => (layers as f64).sqrt().ceil() as u64,
    };
    let segments = layers.div_ceil(g);
    let held = segments + g;
    // The output layer's gradient, beside the activations.
    let loss_gradient = rows * classes * data;
    model + batch_data + held * activation + loss_gradient
}
// ANCHOR_END: peak_bytes

// ANCHOR: choose_settings
/// Settings that make one update of `setup` fit a card of `card_bytes` without changing its
/// batch, using no strategy that is not needed.
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
