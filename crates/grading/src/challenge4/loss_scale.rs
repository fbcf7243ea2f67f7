//! `loss_scale`: the factor each micro-batch's mean loss is multiplied by so that the
//! accumulated gradients are the whole batch's mean gradient. The expected value is the
//! engine's own factor ([`LossWeighting::ByRows`]), which gpumem's tests show gives the large
//! batch's update on a split the engine makes ([`micro_batches`]); the usual `1 / k` passes
//! the even splits and fails the uneven ones.

use super::{Answers, push};
use crate::{Report, attempt_timed};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::mlp::{LossWeighting, micro_batches};
use rand::RngExt;

/// The check group, as the report names it.
pub const LOSS_SCALE: &str = "loss_scale";

/// How far from the engine's factor an answer may be (relative) and pass: rounding only.
const TOLERANCE: f64 = 1e-9;

/// The most micro-batches a random case splits into.
const MAX_STEPS: u64 = 32;

const HINT: &str = "1/k weighs every micro-batch equally: with an uneven split (10 rows as 4 + 3 \
    + 3) each row of a shorter micro-batch counts more than a row of a longer one, and the sum \
    is not the batch's mean. The batch's mean loss is the sum of each micro-batch's mean times \
    its rows / batch: that share is the factor. The engine's split gives the first \
    batch % accumulation_steps micro-batches one row more than the rest";

/// `(batch, accumulation_steps)` pairs: even and uneven splits the book talks about, then
/// random ones from `rng`.
pub(super) fn cases(rng: &mut impl rand::Rng) -> Vec<(u64, u64)> {
    let mut cases = vec![
        // Even: 1/k is right.
        (1, 1),
        (9, 3),
        (32, 4),
        (FULL, 8),
        // Uneven: the first micro-batches are one row longer.
        (10, 3),
        (7, 2),
        (FULL, 7),
        (999_999, 4),
        // One row more than the micro-batches can share: one long, the rest short.
        (33, 32),
    ];
    while cases.len() < 15 {
        let batch = 10f64.powf(rng.random_range(1.0..6.5)) as u64;
        let steps = rng.random_range(2..=MAX_STEPS.min(batch));
        cases.push((batch, steps));
    }
    cases
}

/// Checks `loss_scale` on the first and the last micro-batch of `batch` rows in `steps`
/// (on an uneven split, a long one and a short one).
pub(super) fn grade(report: &mut Report, answers: &Answers, batch: u64, steps: u64) {
    let split = micro_batches(batch, steps);
    let mut checked = vec![0, split.len() - 1];
    checked.dedup();
    for i in checked {
        let len = split[i].1;
        let expected = LossWeighting::ByRows.factor(batch, steps, len);
        let got = {
            let f = answers.loss_scale;
            let i = i as u64;
            attempt_timed(f as usize, move || f(batch, steps, i))
        }
        .map(|v| {
            let close = ((v - expected) / expected).abs() <= TOLERANCE;
            (v.to_string(), close)
        });
        push(
            report,
            LOSS_SCALE,
            &format!("loss_scale(batch {batch}, accumulation_steps {steps}, index {i})"),
            format!(
                "{expected} (its {len} rows of {batch}; the engine's split: {})",
                describe(&split)
            ),
            got,
            HINT,
        );
    }
}

/// The split in words: every length when there are few, else how many of each.
fn describe(split: &[(u64, u64)]) -> String {
    let lens: Vec<u64> = split.iter().map(|&(_, len)| len).collect();
    if lens.len() <= 4 {
        return lens
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" + ");
    }
    let (long, short) = (lens[0], lens[lens.len() - 1]);
    let longer = lens.iter().filter(|&&l| l == long).count();
    if long == short {
        format!("{longer} × {long}")
    } else {
        format!("{longer} × {long} + {} × {short}", lens.len() - longer)
    }
}
