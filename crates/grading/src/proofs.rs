//! What every proof of a grader asserts about a report (the exercises' `tests/proofs.rs`).

use crate::{Outcome, Report};

/// The report failed, only on `function` (a function or a check group), each miss a plain
/// failure, and the first miss's hint mentions `hint`; the report shows expected and got.
pub fn fails_on(report: &Report, function: &str, hint: &str) {
    assert!(!report.passed(), "a wrong answer passed:\n{report}");
    let misses: Vec<_> = report.misses().collect();
    assert!(
        misses.iter().all(|c| c.function == function),
        "missed elsewhere too:\n{report}"
    );
    assert!(
        misses.iter().all(|c| c.outcome == Outcome::Fail),
        "{report}"
    );
    assert!(
        misses[0].hint.contains(hint),
        "hint `{}` lacks `{hint}`",
        misses[0].hint
    );
    let text = report.to_string();
    assert!(
        text.contains("expected:") && text.contains("got:"),
        "{text}"
    );
}

/// Every check of the report is "not attempted yet", and the report says so.
pub fn not_attempted(report: &Report) {
    assert!(!report.passed());
    assert!(
        report
            .checks
            .iter()
            .all(|c| c.outcome == Outcome::NotAttempted),
        "{report}"
    );
    assert!(report.to_string().contains("not attempted yet"), "{report}");
}
