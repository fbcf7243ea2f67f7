//! Proofs that challenge 2's grader grades (as rustlings does for its exercises): the
//! reference solution passes, the shipped stub fails as "not attempted", and plausible wrong
//! answers fail on the function they get wrong, with a hint that points at the mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge2::answers_of;
use grading::challenge2::grade;
use grading::proofs::*;
use grading::{Opt, Setup, seed};

#[path = "../../../solutions/challenge2/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge2.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 20);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

#[test]
fn the_shipped_stub_is_not_attempted() {
    not_attempted(&grade(&answers_of!(stub), seed()));
}

/// Weights only.
mod no_biases {
    pub use crate::solution::{deepest_fit, model_bytes};
    pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
        inputs * width + (layers - 1) * width * width + width * classes
    }
}

/// Parameters only: no gradients, no optimizer state.
mod no_gradients {
    use super::*;
    pub use crate::solution::{deepest_fit, parameter_count};
    pub fn model_bytes(s: Setup) -> u64 {
        parameter_count(s.inputs, s.width, s.layers, s.classes) * 4
    }
}

/// Bits instead of bytes.
mod bits {
    use super::*;
    pub use crate::solution::{deepest_fit, parameter_count};
    pub fn model_bytes(s: Setup) -> u64 {
        let copies = if s.optimizer == Opt::Adam { 4 } else { 2 };
        parameter_count(s.inputs, s.width, s.layers, s.classes) * 32 * copies
    }
}

/// Adam's state counted as one copy of the parameters, not two (its first and second
/// moments).
mod adam_one_copy {
    use super::*;
    pub use crate::solution::{deepest_fit, parameter_count};
    pub fn model_bytes(s: Setup) -> u64 {
        let copies = if s.optimizer == Opt::Adam { 3 } else { 2 };
        parameter_count(s.inputs, s.width, s.layers, s.classes) * 4 * copies
    }
}

/// Only the model: as if a large batch cost nothing.
mod no_activations {
    use super::*;
    pub use crate::solution::{model_bytes, parameter_count};
    pub fn deepest_fit(s: Setup, card: u64) -> u64 {
        let mut layers = 0;
        while model_bytes(Setup {
            layers: layers + 1,
            ..s
        }) <= card
        {
            layers += 1;
        }
        layers
    }
}

/// Adam's update without its square roots: four copies of the parameters at its peak, not
/// five.
mod no_update_temporaries {
    use super::*;
    pub use crate::solution::{model_bytes, parameter_count};
    pub fn deepest_fit(s: Setup, card: u64) -> u64 {
        let step_bytes = |layers: u64| {
            let s = Setup { layers, ..s };
            let activation = s.batch * s.width * 4;
            let parameters = parameter_count(s.inputs, s.width, layers, s.classes) * 4;
            let top = model_bytes(s) - parameters + (layers + 2) * activation;
            let bottom = model_bytes(s) + 3 * activation;
            top.max(bottom) + s.batch * (s.inputs * 4 + 8 + s.classes * 4)
        };
        let mut layers = 0;
        while step_bytes(layers + 1) <= card {
            layers += 1;
        }
        layers
    }
}

#[test]
fn forgetting_biases_fails() {
    fails_on(
        &grade(&answers_of!(no_biases), seed()),
        "parameter_count",
        "biases",
    );
}

#[test]
fn forgetting_gradients_fails() {
    fails_on(
        &grade(&answers_of!(no_gradients), seed()),
        "model_bytes",
        "gradient",
    );
}

#[test]
fn bits_instead_of_bytes_fail() {
    fails_on(&grade(&answers_of!(bits), seed()), "model_bytes", "4 bytes");
}

#[test]
fn ignoring_activations_fails() {
    fails_on(
        &grade(&answers_of!(no_activations), seed()),
        "deepest_fit",
        "activation",
    );
}

#[test]
fn forgetting_adams_square_roots_fails() {
    fails_on(
        &grade(&answers_of!(no_update_temporaries), seed()),
        "deepest_fit",
        "square root",
    );
}

#[test]
fn counting_adams_state_as_one_copy_fails() {
    fails_on(
        &grade(&answers_of!(adam_one_copy), seed()),
        "model_bytes",
        "two running averages",
    );
}

/// The reference's search with its step never taken: `layers += 0` loops for ever whenever
/// one layer fits.
mod endless_loop {
    use super::*;
    pub use crate::solution::{model_bytes, parameter_count};
    #[allow(clippy::identity_op)]
    pub fn deepest_fit(s: Setup, card: u64) -> u64 {
        let mut layers = 0;
        while model_bytes(Setup {
            layers: layers + 1,
            ..s
        }) <= card
        {
            layers += 0;
        }
        layers
    }
}

#[test]
fn an_endless_loop_is_reported_not_waited_on() {
    let limit = std::time::Duration::from_millis(300);
    let started = std::time::Instant::now();
    let report = grading::challenge2::grade_within(&answers_of!(endless_loop), seed(), limit);
    // Once the first call has not returned, later calls of it are not made: one wait in all
    // (the rest is the grade's own planning).
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let misses: Vec<_> = report.misses().collect();
    assert!(
        misses.iter().all(|c| c.function == "deepest_fit"),
        "{report}"
    );
    assert!(
        misses[0]
            .got
            .contains("did not return within 0.3 s (an endless loop?)"),
        "{report}"
    );
    assert!(report.to_string().contains("an endless loop?"), "{report}");
}
