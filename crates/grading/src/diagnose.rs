//! Names what a wrong number lacks. A grader measures each term of an expected value from the
//! engine's allocations; an answer that is the expected value less one term (or plus one) is
//! told which term, rather than shown the whole recipe again.

use crate::NoValue;

/// The terms an answer may lack or count twice, each with the hint that names it.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    expected: u64,
    /// `(expected − got, hint)`: the first whose difference matches names the mistake.
    cases: Vec<(i128, String)>,
    /// `(factor, hint)`: an answer `factor` times the expected one.
    factors: Vec<(u64, String)>,
}

impl Diagnosis {
    pub fn new(expected: u64) -> Diagnosis {
        Diagnosis {
            expected,
            cases: Vec::new(),
            factors: Vec::new(),
        }
    }

    /// An answer `bytes` short of the expected one lacks the term `hint` names.
    pub fn lacks(mut self, bytes: u64, hint: impl Into<String>) -> Diagnosis {
        if bytes > 0 {
            self.cases.push((i128::from(bytes), hint.into()));
        }
        self
    }

    /// An answer `bytes` over the expected one counts the term `hint` names once too often.
    pub fn extra(mut self, bytes: u64, hint: impl Into<String>) -> Diagnosis {
        if bytes > 0 {
            self.cases.push((-i128::from(bytes), hint.into()));
        }
        self
    }

    /// An answer `factor` times the expected one (bits for bytes: 8).
    pub fn times(mut self, factor: u64, hint: impl Into<String>) -> Diagnosis {
        self.factors.push((factor, hint.into()));
        self
    }

    /// The hint for `got`: the term it lacks or repeats, else `otherwise`.
    pub fn hint(&self, got: &Result<u64, NoValue>, otherwise: &str) -> String {
        let Ok(got) = *got else {
            return otherwise.to_string();
        };
        let off = i128::from(self.expected) - i128::from(got);
        let term = self.cases.iter().find(|(d, _)| *d == off);
        let factor = self.factors.iter().find(|(f, _)| {
            self.expected > 0 && u128::from(got) == u128::from(*f) * u128::from(self.expected)
        });
        match (term, factor) {
            (Some((_, h)), _) | (None, Some((_, h))) => h.clone(),
            (None, None) => otherwise.to_string(),
        }
    }
}
