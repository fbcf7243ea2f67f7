//! Plausible wrong answers to `loss_scale`, each the reference solution with that function
//! got wrong, and the proofs that the grader catches them.

use super::*;
use grading::Outcome;

/// The usual `loss / accumulation_steps`: right only when the split is even.
pub mod one_over_k {
    pub use crate::solution::{choose_settings, peak_bytes};
    pub fn loss_scale(_batch: u64, accumulation_steps: u64, _index: u64) -> f64 {
        1.0 / accumulation_steps as f64
    }
}

/// Every micro-batch taken as ⌈batch / accumulation_steps⌉ rows: the shorter ones at the end
/// weigh too much.
pub mod every_micro_batch_as_long {
    pub use crate::solution::{choose_settings, peak_bytes};
    pub fn loss_scale(batch: u64, accumulation_steps: u64, _index: u64) -> f64 {
        batch.div_ceil(accumulation_steps) as f64 / batch as f64
    }
}

/// `(batch, accumulation_steps)` of a check's case text.
fn split_of(case: &str) -> (u64, u64) {
    let number = |after: &str| -> u64 {
        let rest = &case[case.find(after).unwrap() + after.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap()
    };
    (number("batch "), number("accumulation_steps "))
}

#[test]
fn the_shipped_stub_does_not_answer_loss_scale() {
    let report = grade(&answers_of!(stub), seed());
    let checks: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.function == LOSS_SCALE)
        .collect();
    assert!(checks.len() >= 10, "{report}");
    assert!(checks.iter().all(|c| c.outcome == Outcome::NotAttempted));
}

#[test]
fn one_over_k_fails_on_uneven_splits_alone() {
    let report = grade(&answers_of!(one_over_k), seed());
    fails_on(&report, LOSS_SCALE, "1/k weighs every micro-batch equally");
    // The even splits pass and every uneven one fails: the cases tell the two apart.
    let checks = report.checks.iter().filter(|c| c.function == LOSS_SCALE);
    let (mut even, mut uneven) = (0, 0);
    for c in checks {
        let (batch, steps) = split_of(&c.case);
        if batch % steps == 0 {
            even += 1;
            assert_eq!(c.outcome, Outcome::Pass, "{}", c.case);
        } else {
            uneven += 1;
            assert_eq!(c.outcome, Outcome::Fail, "{}", c.case);
        }
    }
    assert!(even >= 4 && uneven >= 10, "{even} even, {uneven} uneven");
    assert!(report.to_string().contains("4 + 3 + 3"), "{report}");
}

#[test]
fn every_micro_batch_as_long_fails_on_the_short_ones() {
    let report = grade(&answers_of!(every_micro_batch_as_long), seed());
    fails_on(&report, LOSS_SCALE, "one row more than the rest");
    assert!(
        report.misses().all(|c| !c.case.ends_with("index 0)")),
        "{report}"
    );
}
