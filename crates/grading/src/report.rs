//! The grader's verdict: checks grouped by function, printed so a learner knows what to fix.
//!
//! An exercise has a core, graded first, and may have extensions ("going further"): check
//! groups marked with [`Report::extension`]. A learner's test passes when the core passes and
//! every extension they attempted passes; an extension still at `todo!()` is left for later.

use crate::NoValue;
use std::fmt;

/// How one check went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    NotAttempted,
    Panicked(String),
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
    /// The check groups that are extensions, not the core.
    pub extensions: Vec<&'static str>,
}

impl Report {
    pub fn new(title: &str) -> Report {
        Report {
            title: title.to_string(),
            checks: Vec::new(),
            extensions: Vec::new(),
        }
    }

    /// Marks the check group `function` as an extension ("going further"): left at
    /// `todo!()`, it does not fail a learner's test.
    pub fn extension(&mut self, function: &'static str) {
        if !self.extensions.contains(&function) {
            self.extensions.push(function);
        }
    }

    fn is_extension(&self, function: &str) -> bool {
        self.extensions.contains(&function)
    }

    /// Whether a learner's test passes: the core passes, and so does every extension with
    /// at least one answer (not `todo!()`).
    pub fn learner_passed(&self) -> bool {
        self.functions().into_iter().all(|function| {
            let outcomes: Vec<&Outcome> = self
                .checks
                .iter()
                .filter(|c| c.function == function)
                .map(|c| &c.outcome)
                .collect();
            outcomes.iter().all(|o| **o == Outcome::Pass)
                || (self.is_extension(function)
                    && outcomes.iter().all(|o| **o == Outcome::NotAttempted))
        })
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
            Err(NoValue::NotAttempted) => ("todo!()".into(), Outcome::NotAttempted),
            Err(NoValue::Panicked(m)) => (format!("a panic: {m}"), Outcome::Panicked(m)),
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

    /// Every check passed, extensions included.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.outcome == Outcome::Pass)
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
    /// check misses, so the report is all they see.
    pub fn verdict(&self) -> Result<(), String> {
        println!("{self}");
        if self.learner_passed() {
            Ok(())
        } else {
            Err(format!("{} — see the report above", self.summary()))
        }
    }

    /// One line: how many checks passed (the core's and the extensions' apart, when the
    /// exercise has extensions).
    pub fn summary(&self) -> String {
        let count = |extension: bool| {
            let part: Vec<&Check> = self
                .checks
                .iter()
                .filter(|c| self.is_extension(c.function) == extension)
                .collect();
            let passed = part.iter().filter(|c| c.outcome == Outcome::Pass).count();
            (passed, part.len())
        };
        let (passed, total) = count(false);
        if self.extensions.is_empty() {
            return format!("{}: {passed} of {total} checks passed", self.title);
        }
        let (further, further_total) = count(true);
        let core = if passed == total {
            "the core passed"
        } else {
            "the core not yet"
        };
        format!(
            "{}: {core} ({passed} of {total} checks); going further: {further} of \
             {further_total} checks passed",
            self.title
        )
    }
}

/// How many failed checks of one function to show in full.
const SHOWN: usize = 2;

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        for function in self.functions() {
            let checks: Vec<&Check> = self
                .checks
                .iter()
                .filter(|c| c.function == function)
                .collect();
            let passed = checks.iter().filter(|c| c.outcome == Outcome::Pass).count();
            let status = if passed == checks.len() {
                format!("all {passed} passed")
            } else if checks.iter().all(|c| c.outcome == Outcome::NotAttempted) {
                "not attempted yet (it still says todo!())".to_string()
            } else {
                format!("{} of {} missed", checks.len() - passed, checks.len())
            };
            let part = if self.is_extension(function) {
                " [going further: optional until you attempt it]"
            } else {
                ""
            };
            writeln!(f, "\n  {function}{part}: {status}")?;
            if checks.iter().all(|c| c.outcome == Outcome::NotAttempted) {
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
