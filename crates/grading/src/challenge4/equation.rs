//! `peak_bytes`, graded in parts: the core (float32, the whole batch or micro-batches), then
//! four going-further parts, each one strategy's effect on the equation's terms. Each part is
//! a group of the report, with the rule it needs as its hint (the book states the same rules).

use super::{Answers, Settings, TOLERANCE, planned, push, run};
use crate::{Report, Setup, attempt_timed};
use gpumem::lesson::UNLIMITED_BYTES;
use gpumem::mlp::{Checkpointing, Precision};
use gpumem::size::format_bytes;

/// The core: float32, no checkpointing, with or without gradient accumulation.
pub const CORE: &str = "peak_bytes, the core: float32, whole batch or micro-batches";
/// Going further 1: float64, no checkpointing.
pub const FLOAT64: &str = "peak_bytes, going further 1: float64";
/// Going further 2: float32 with checkpointing.
pub const CHECKPOINTING: &str = "peak_bytes, going further 2: checkpointing";
/// Going further 3: mixed precision, no checkpointing.
pub const MIXED: &str = "peak_bytes, going further 3: mixed precision";
/// Going further 4: checkpointing with mixed precision or float64.
pub const TOGETHER: &str = "peak_bytes, going further 4: strategies together";

/// Every part of `peak_bytes`, the core first.
pub const PARTS: [&str; 5] = [CORE, FLOAT64, CHECKPOINTING, MIXED, TOGETHER];

/// The part of `peak_bytes` that `settings` belong to: the arms of the stub's `match`.
pub fn part_of(settings: &Settings) -> &'static str {
    match (settings.precision, settings.checkpointing) {
        (Precision::Float32, Checkpointing::Off) => CORE,
        (Precision::Float64, Checkpointing::Off) => FLOAT64,
        (Precision::Float32, _) => CHECKPOINTING,
        (Precision::Mixed, Checkpointing::Off) => MIXED,
        _ => TOGETHER,
    }
}

const CORE_HINT: &str = "Challenge 1's equation, with two changes for accumulation. Always \
    there: the parameters, Adam's two running averages, the whole batch (features, and 8-byte \
    int64 labels: micro-batches are slices of it) and one micro-batch's y_pred; then the \
    busiest of three moments: the top of the backward pass (the layers' kept activations plus \
    two more micro-batch × width tensors — or one more and the top hidden layer's weight \
    gradient being made — beside the gradients that exist by then), near its bottom at hidden \
    layer 1 (the gradients above it, three micro-batch × width tensors and a fourth or its \
    weight gradient being made), and Adam's update (every gradient and square roots as large as the parameters). \
    With accumulation one micro-batch of ⌈batch / steps⌉ rows is computed at a time, and from \
    the second micro-batch on every gradient exists, at the top of the backward pass too";

const FLOAT64_HINT: &str = "under float64 every value but the labels takes 8 bytes: the \
    parameters, their gradients, the optimizer's state, the features, the activations";

const CHECKPOINTING_HINT: &str = "with checkpoint segments of g hidden layers the forward pass \
    keeps only each segment's input; the backward pass recomputes each checkpointed segment, \
    and a segment is recomputed whole, so at its busiest it holds the kept inputs below the segment (or the gradients above it) and the \
    segment's g activations plus two gradients. Check the top of the backward pass, the \
    highest full segment and the lowest one";

const MIXED_HINT: &str = "under mixed precision only the activations (and their gradients) \
    take 2 bytes: the master weights, their gradients and the optimizer's state stay float32 \
    (4 bytes), and so do the features; autocast adds float16 copies of the weights, all of \
    them at the end of the forward pass, which the backward pass holds until it reaches each \
    layer; a weight gradient is made in float16, then copied to float32";

const TOGETHER_HINT: &str = "each strategy changes its own terms, and they combine: \
    checkpointing's segments hold activations of the precision's size, and under mixed \
    precision a recomputed segment makes its float16 weight copies again";

/// The rule a part needs, in words: the report's hint (the book states the same rules).
pub fn rule(part: &str) -> &'static str {
    match part {
        CORE => CORE_HINT,
        FLOAT64 => FLOAT64_HINT,
        CHECKPOINTING => CHECKPOINTING_HINT,
        MIXED => MIXED_HINT,
        _ => TOGETHER_HINT,
    }
}

/// Compares the learner's `peak_bytes` with the engine's planned peak, in its part's group;
/// the hint names `term` when the case was built to test one, else the part's rule.
pub(super) fn grade(
    report: &mut Report,
    answers: &Answers,
    setup: Setup,
    settings: Settings,
    term: Option<&str>,
) {
    let (config, rows) = run(&setup, &settings);
    let expected = planned(&config, rows, UNLIMITED_BYTES)
        .expect("the grader's cases are valid")
        .peak_requested;
    let got = {
        let f = answers.peak_bytes;
        attempt_timed(f as usize, move || f(setup, settings))
    }
    .map(|v| {
        let off = v as f64 / expected as f64 - 1.0;
        (
            format!("{v} ({:+.1} %)", 100.0 * off),
            off.abs() <= TOLERANCE,
        )
    });
    let part = part_of(&settings);
    push(
        report,
        part,
        &format!("peak_bytes({setup}; {settings})"),
        format!(
            "{expected} ({}: the engine's planned peak before the allocator's rounding; within \
             {:.0} % passes)",
            format_bytes(expected),
            100.0 * TOLERANCE
        ),
        got,
        term.unwrap_or(rule(part)),
    );
}
