//! The grader's verdict: checks grouped by function, printed so a learner knows what to fix.

use crate::NoValue;
use std::fmt;
use std::io::{self, Write};

/// How one check went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    NotAttempted,
    Panicked(String),
}

impl Outcome {
    /// The outcome of a call that gave no value.
    pub fn of(no: NoValue) -> Outcome {
        match no {
            NoValue::NotAttempted => Outcome::NotAttempted,
            NoValue::Panicked(m) => Outcome::Panicked(m),
            NoValue::DidNotReturn(limit) => Outcome::Panicked(crate::did_not_return(limit)),
        }
    }
}

/// One comparison of a learner's answer with the engine's measurement.
#[derive(Debug, Clone)]
pub struct Check {
    /// The learner's function.
    pub function: &'static str,
    /// The setup, in words.
    pub case: String,
    pub expected: String,
    pub got: String,
    /// What usually causes this miss.
    pub hint: String,
    pub outcome: Outcome,
}

/// All checks of one exercise.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub title: String,
    pub checks: Vec<Check>,
    /// Check groups that go further than the exercise's core: graded and reported after the
    /// core; a learner's test passes while they are still `todo!()`, and fails once one is
    /// answered wrongly ([`Report::verdict`]).
    pub going_further: Vec<&'static str>,
    /// Functions the stub gives, written on the learner's pieces: one still `todo!()` is
    /// a piece the learner has yet to write, not this function ([`Report::mark_given`]).
    pub given: Vec<&'static str>,
}

impl Report {
    pub fn new(title: &str) -> Report {
        Report {
            title: title.to_string(),
            checks: Vec::new(),
            going_further: Vec::new(),
            given: Vec::new(),
        }
    }

    /// Records the comparison of `got` (the learner's answer) with `expected` (measured).
    pub fn compare<T: PartialEq + fmt::Debug>(
        &mut self,
        function: &'static str,
        case: impl Into<String>,
        expected: &T,
        explain_expected: impl Into<String>,
        got: Result<T, NoValue>,
        hint: impl Into<String>,
    ) {
        let (got_text, outcome) = match got {
            Ok(v) if &v == expected => (format!("{v:?}"), Outcome::Pass),
            Ok(v) => (format!("{v:?}"), Outcome::Fail),
            Err(no) => (no.got(), Outcome::of(no)),
        };
        let explain = explain_expected.into();
        let expected_text = if explain.is_empty() {
            format!("{expected:?}")
        } else {
            format!("{expected:?} ({explain})")
        };
        self.checks.push(Check {
            function,
            case: case.into(),
            expected: expected_text,
            got: got_text,
            hint: hint.into(),
            outcome,
        });
    }

    /// Marks the check group `function` as going further than the core.
    pub fn mark_going_further(&mut self, function: &'static str) {
        if !self.going_further.contains(&function) {
            self.going_further.push(function);
        }
    }

    /// Marks `function` as given by the stub on top of the learner's pieces: while a piece
    /// still says `todo!()` so does it, and the report says to write the pieces first.
    pub fn mark_given(&mut self, function: &'static str) {
        if !self.given.contains(&function) {
            self.given.push(function);
        }
    }

    /// The hint maker for `given`, a stub's function that adds up `pieces`: once a piece
    /// missed, `given` misses too, and its hint sends the learner to that piece rather than
    /// to the sum; while every piece passes, each check's own hint.
    pub fn fix_pieces_first(
        &self,
        given: &'static str,
        pieces: &[&'static str],
    ) -> impl Fn(&str) -> String + use<> {
        let missed: Vec<&str> = pieces
            .iter()
            .copied()
            .filter(|f| self.misses().any(|c| c.function == *f))
            .collect();
        move |hint| match missed.as_slice() {
            [] => hint.to_string(),
            pieces => format!(
                "`{given}` adds up your pieces: fix `{}` first (see above)",
                pieces.join("` and `")
            ),
        }
    }

    /// Whether a learner's test passes: the core passed, and every going-further group is
    /// either still `todo!()` (left for later) or passed.
    pub fn learner_passed(&self) -> bool {
        self.functions().into_iter().all(|function| {
            let outcomes: Vec<&Outcome> = self
                .checks
                .iter()
                .filter(|c| c.function == function)
                .map(|c| &c.outcome)
                .collect();
            outcomes.iter().all(|o| **o == Outcome::Pass)
                || (self.going_further.contains(&function)
                    && outcomes.iter().all(|o| **o == Outcome::NotAttempted))
        })
    }

    /// Every check passed, the going-further ones included.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.outcome == Outcome::Pass)
    }

    /// Whether `check` belongs to a going-further group.
    pub fn is_going_further(&self, check: &Check) -> bool {
        self.going_further.contains(&check.function)
    }

    /// Every check of the core passed (the going-further ones may miss).
    pub fn core_passed(&self) -> bool {
        self.checks
            .iter()
            .all(|c| c.outcome == Outcome::Pass || self.is_going_further(c))
    }

    /// Checks that did not pass.
    pub fn misses(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.outcome != Outcome::Pass)
    }

    /// Functions in the order they were first checked.
    fn functions(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for c in &self.checks {
            if !out.contains(&c.function) {
                out.push(c.function);
            }
        }
        out
    }

    /// A learner's test result: prints the report and returns an error (not a panic) when a
    /// check of the core misses, or one of a going-further group they answered, so the report
    /// is all they see. Going-further groups still at `todo!()` are reported and left for
    /// later (see [`Report::verdict_all`] for every check). A passing report goes straight to
    /// stderr: libtest captures `print!` of a test that passes, and the learner should see
    /// their tally without `--nocapture`.
    pub fn verdict(&self) -> Result<(), String> {
        self.verdict_on(self.learner_passed(), &mut io::stderr())
    }

    /// Like [`Report::verdict`], but every check must pass, the going-further ones too.
    pub fn verdict_all(&self) -> Result<(), String> {
        self.verdict_on(self.passed(), &mut io::stderr())
    }

    /// The verdict, a passing report written to `passing` (the proofs pass a sink), a failing
    /// one printed for libtest to show.
    pub fn verdict_on(&self, passed: bool, passing: &mut impl Write) -> Result<(), String> {
        if passed {
            // Nothing to do if stderr is closed: the test still passed.
            let _ = writeln!(passing, "{self}");
            Ok(())
        } else {
            println!("{self}");
            Err(format!("{} — see the report above", self.summary()))
        }
    }

    /// How many of `checks` passed, of how many.
    fn tally<'a>(checks: impl Iterator<Item = &'a Check>) -> (usize, usize) {
        checks.fold((0, 0), |(p, n), c| {
            (p + usize::from(c.outcome == Outcome::Pass), n + 1)
        })
    }

    /// One line: how many checks passed (the core's and the going-further ones apart, where
    /// there are going-further checks).
    pub fn summary(&self) -> String {
        let (passed, all) = Self::tally(self.checks.iter());
        let (further_passed, further) =
            Self::tally(self.checks.iter().filter(|c| self.is_going_further(c)));
        if further == 0 {
            return format!("{}: {passed} of {all} checks passed", self.title);
        }
        let (core_passed, core) = (passed - further_passed, all - further);
        let core_words = if self.core_passed() {
            "the core is done".to_string()
        } else {
            format!("core: {core_passed} of {core} checks passed")
        };
        let further_words = if further_passed == further {
            format!("going further: all {further} checks passed too")
        } else {
            format!(
                "going further (optional): {further_passed} of {further} checks passed, {} \
                 remain",
                further - further_passed
            )
        };
        format!("{}: {core_words}; {further_words}", self.title)
    }
}

/// How many failed checks of one function to show in full.
const SHOWN: usize = 2;

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        // The core's groups first, then the going-further ones under their own heading.
        let (core, further): (Vec<_>, Vec<_>) = self
            .functions()
            .into_iter()
            .partition(|function| !self.going_further.contains(function));
        let heading = !further.is_empty();
        for (i, function) in core.iter().chain(&further).copied().enumerate() {
            if heading && i == core.len() {
                writeln!(
                    f,
                    "\n  going further (optional: a part still at todo!() is left for later; one \
                     you answer must pass)"
                )?;
            }
            let checks: Vec<&Check> = self
                .checks
                .iter()
                .filter(|c| c.function == function)
                .collect();
            let passed = checks.iter().filter(|c| c.outcome == Outcome::Pass).count();
            let untouched = checks.iter().all(|c| c.outcome == Outcome::NotAttempted);
            let status = if passed == checks.len() {
                format!(": all {passed} passed")
            } else if untouched && self.given.contains(&function) {
                " is given: it adds up your pieces — write them first".to_string()
            } else if untouched {
                ": not attempted yet (it still says todo!())".to_string()
            } else {
                format!(": {} of {} missed", checks.len() - passed, checks.len())
            };
            writeln!(f, "\n  {function}{status}")?;
            if untouched {
                continue;
            }
            let misses: Vec<&&Check> = checks
                .iter()
                .filter(|c| c.outcome != Outcome::Pass)
                .collect();
            for c in misses.iter().take(SHOWN) {
                writeln!(f, "    x {}", c.case)?;
                writeln!(f, "        expected: {}", c.expected)?;
                writeln!(f, "        got:      {}", c.got)?;
                writeln!(f, "        hint:     {}", c.hint)?;
            }
            if misses.len() > SHOWN {
                writeln!(f, "    … and {} more like these", misses.len() - SHOWN)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report where `piece` got `got` (expected 1) and `other` passed.
    fn graded(got: u64) -> Report {
        let mut report = Report::new("test");
        report.compare("piece", "piece()", &1u64, "", Ok(got), "piece's hint");
        report.compare("other", "other()", &1u64, "", Ok(1u64), "other's hint");
        report
    }

    #[test]
    fn a_missed_piece_is_named_instead_of_the_hint() {
        let first = graded(2).fix_pieces_first("sum", &["piece", "other"]);
        assert_eq!(
            first("the sum's hint"),
            "`sum` adds up your pieces: fix `piece` first (see above)"
        );
    }

    #[test]
    fn every_piece_passed_keeps_the_hint() {
        let first = graded(1).fix_pieces_first("sum", &["piece", "other"]);
        assert_eq!(first("the sum's hint"), "the sum's hint");
    }

    #[test]
    fn a_piece_not_attempted_is_named_too() {
        let mut report = graded(1);
        report.compare::<u64>("todo", "todo()", &1, "", Err(NoValue::NotAttempted), "");
        let first = report.fix_pieces_first("sum", &["piece", "todo"]);
        assert!(first("h").contains("fix `todo` first"));
    }
}
