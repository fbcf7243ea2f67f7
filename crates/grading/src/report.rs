//! The grader's verdict: checks grouped by function, printed so a learner knows what to fix.

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
}

impl Report {
    pub fn new(title: &str) -> Report {
        Report {
            title: title.to_string(),
            checks: Vec::new(),
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
        if self.passed() {
            Ok(())
        } else {
            Err(format!("{} — see the report above", self.summary()))
        }
    }

    /// One line: how many checks passed.
    pub fn summary(&self) -> String {
        let passed = self
            .checks
            .iter()
            .filter(|c| c.outcome == Outcome::Pass)
            .count();
        format!(
            "{}: {passed} of {} checks passed",
            self.title,
            self.checks.len()
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
            writeln!(f, "\n  {function}: {status}")?;
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
