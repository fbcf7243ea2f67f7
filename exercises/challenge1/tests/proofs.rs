//! Proofs that challenge 1's grader grades (as rustlings does for its exercises): the
//! reference solution passes, the shipped stub fails as "not attempted", and plausible wrong
//! answers fail on the function they get wrong, with a hint that points at the mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use challenge1::answers_of;
use challenge1::grader::grade;
use grading::proofs::*;
use grading::{Opt, Setup, seed};

#[path = "../solution/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_stub.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 30);
}

#[test]
fn the_shipped_stub_is_not_attempted() {
    not_attempted(&grade(&answers_of!(stub), seed()));
}

/// Counting bits instead of bytes.
mod bits {
    pub use crate::solution::{fits, stored_activation_bytes};
    pub fn activation_bytes(batch: u64, width: u64) -> u64 {
        batch * width * 32
    }
}

/// Forgetting that an activation has one row per sample.
mod no_batch {
    pub use crate::solution::{activation_bytes, fits};
    pub fn stored_activation_bytes(_batch: u64, width: u64, layers: u64) -> u64 {
        layers * width * 4
    }
}

/// Forgetting the gradients (and optimizer state) in the equation.
mod no_gradients {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let params = (s.inputs + 1) * s.width
            + (s.layers - 1) * (s.width + 1) * s.width
            + (s.width + 1) * s.classes;
        let acts = (s.layers + 1) * s.batch * s.width * 4;
        params * 4 + s.batch * (s.inputs + 1) * 4 + acts <= card
    }
}

/// Counting each activation once: the lesson's full batch would seem to fit.
mod one_copy_per_layer {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let params = (s.inputs + 1) * s.width
            + (s.layers - 1) * (s.width + 1) * s.width
            + (s.width + 1) * s.classes;
        let copies = if s.optimizer == Opt::Adam { 4 } else { 2 };
        params * 4 * copies + s.batch * (s.inputs + 1) * 4 + s.layers * s.batch * s.width * 4
            <= card
    }
}

#[test]
fn bits_instead_of_bytes_fail() {
    fails_on(
        &grade(&answers_of!(bits), seed()),
        "activation_bytes",
        "bytes, not bits",
    );
}

#[test]
fn ignoring_the_batch_fails() {
    fails_on(
        &grade(&answers_of!(no_batch), seed()),
        "stored_activation_bytes",
        "batch × width",
    );
}

#[test]
fn forgetting_gradients_fails() {
    fails_on(
        &grade(&answers_of!(no_gradients), seed()),
        "fits",
        "gradients",
    );
}

#[test]
fn one_activation_per_layer_fails() {
    fails_on(
        &grade(&answers_of!(one_copy_per_layer), seed()),
        "fits",
        "exists twice",
    );
}
