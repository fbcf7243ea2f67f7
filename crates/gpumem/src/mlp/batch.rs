//! The rows of one step, which evaluation and training both take.

use crate::data::Split;

/// The rows of one step: real data, or only a row count on the `plan` backing.
#[derive(Debug, Clone, Copy)]
pub enum Batch<'a> {
    Data(&'a Split),
    Planned(u64),
}

impl Batch<'_> {
    pub fn rows(&self) -> u64 {
        match self {
            Batch::Data(s) => s.len() as u64,
            Batch::Planned(n) => *n,
        }
    }
}
