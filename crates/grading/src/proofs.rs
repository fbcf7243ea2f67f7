//! What every proof of a grader asserts about a report (this crate's `tests/challengeN.rs`).

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

/// The stub's `function` is given (it adds up the learner's pieces): while a piece still says
/// `todo!()` the report says to write the pieces, not that `function` is not attempted.
pub fn given_waits_for_pieces(report: &Report, function: &str) {
    let text = report.to_string();
    assert!(
        text.contains(&format!(
            "{function} is given: it adds up your pieces — write them first"
        )),
        "{text}"
    );
    assert!(
        !text.contains(&format!("{function}: not attempted")),
        "{text}"
    );
}

/// The reference solution's report: every check passes, and there are at least `at_least`
/// of them (a grader that stopped checking would pass too).
pub fn passes(report: &Report, at_least: usize) {
    assert!(report.passed(), "{report}");
    assert!(
        report.checks.len() >= at_least,
        "only {} checks",
        report.checks.len()
    );
}

/// The reference solution passes on other seeds' random cases too.
pub fn passes_on_other_seeds(grade: impl Fn(u64) -> Report) {
    for seed in [1, 7, 99] {
        let report = grade(seed);
        assert!(report.passed(), "seed {seed}:\n{report}");
    }
}

/// A learner's test passes on `report` (the core passed; every attempted extension too).
pub fn learner_passes(report: &Report) {
    assert!(report.learner_passed(), "{report}");
    let mut shown = Vec::new();
    assert!(
        report
            .verdict_on(report.learner_passed(), &mut shown)
            .is_ok()
    );
    // The passing report is written, not captured away: its tally is what the learner sees.
    assert!(
        String::from_utf8_lossy(&shown).contains(&report.summary()),
        "{report}"
    );
}

/// A learner's test fails on `report`.
pub fn learner_fails(report: &Report) {
    assert!(!report.learner_passed(), "{report}");
    let mut shown = Vec::new();
    assert!(
        report
            .verdict_on(report.learner_passed(), &mut shown)
            .is_err()
    );
    assert!(
        shown.is_empty(),
        "a failing report goes to libtest's captured output"
    );
}

/// The report failed, its first miss is in `function`, and the first hint the learner reads
/// (the first `hint:` line of the printed report) names `term`.
pub fn first_hint_names(report: &Report, function: &str, term: &str) {
    assert!(!report.passed(), "a wrong answer passed:\n{report}");
    let first = report.misses().next().expect("a miss");
    assert_eq!(first.function, function, "{report}");
    let text = report.to_string();
    let printed = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("hint:"))
        .expect("the report prints a hint");
    assert!(
        printed.contains(term),
        "the first hint printed, `{printed}`, lacks `{term}`"
    );
}
