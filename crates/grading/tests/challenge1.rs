//! Proofs that challenge 1's grader grades (as rustlings does for its exercises): the
//! reference solution passes, the shipped stub fails as "not attempted", and plausible wrong
//! answers fail on the function they get wrong, with a hint that points at the mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge1::answers_of;
use grading::challenge1::grade;
use grading::proofs::*;
use grading::{Opt, Setup, seed};

#[path = "../../../solutions/challenge1/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge1.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 30);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
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

/// The parameters' bytes, their activations and the batch, as the solution counts them.
fn parts(s: &Setup) -> (u64, u64, u64) {
    let params = ((s.inputs + 1) * s.width
        + (s.layers - 1) * (s.width + 1) * s.width
        + (s.width + 1) * s.classes)
        * 4;
    let batch = s.batch * (s.inputs * 4 + 8 + s.classes * 4);
    (params, s.batch * s.width * 4, batch)
}

/// Adam's state (two copies of the parameters) and its update's square roots (one copy), as
/// the solution counts them; nothing for SGD.
fn adam(s: &Setup, params: u64) -> (u64, u64) {
    match s.optimizer {
        Opt::Sgd => (0, 0),
        Opt::Adam => (2 * params, params),
    }
}

/// Forgetting the gradients, Adam's state and its update's temporaries.
mod no_gradients {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let (params, act, batch) = parts(&s);
        params + batch + (s.layers + 2) * act <= card
    }
}

/// Everything but the gradients: Adam's state and square roots, the batch, the activations.
/// The grader's fixed setups where the gradients decide catch it whatever the seed.
mod only_the_gradients_missing {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let (params, act, batch) = parts(&s);
        let (state, temps) = adam(&s, params);
        let top = (s.layers + 2) * act + (s.width + 1) * s.classes * 4;
        let busiest = top.max(3 * act).max(temps);
        params + state + batch + busiest <= card
    }
}

/// Only the kept activations in the backward pass, not the two gradients in flight beside
/// them: the lesson's full batch would seem to fit.
mod no_gradients_in_flight {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let (params, act, batch) = parts(&s);
        let (state, temps) = adam(&s, params);
        let busiest = (s.layers * act).max(params + act).max(params + temps);
        params + state + batch + busiest <= card
    }
}

/// Adam's update without its square roots: four copies of the parameters, not five.
mod no_update_temporaries {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let (params, act, batch) = parts(&s);
        let state = if s.optimizer == Opt::Adam {
            2 * params
        } else {
            0
        };
        let busiest = ((s.layers + 2) * act).max(params + 3 * act);
        params + state + batch + busiest <= card
    }
}

/// Counting each label as a 4-byte number, not PyTorch's int64: everything else as the
/// solution counts it.
mod int32_labels {
    use super::*;
    pub use crate::solution::{activation_bytes, stored_activation_bytes};
    pub fn fits(s: Setup, card: u64) -> bool {
        let four_bytes_less = Setup {
            batch: s.batch,
            ..s
        };
        // The solution's verdict on a card 4 bytes per row larger is its verdict with
        // 4-byte labels.
        crate::solution::fits(four_bytes_less, card + 4 * s.batch)
    }
}

#[test]
fn four_byte_labels_fail() {
    for seed in [seed(), 1, 2] {
        let report = grade(&answers_of!(int32_labels), seed);
        fails_on(&report, "fits", "int64");
    }
}

#[test]
fn the_label_cases_exist_and_the_solution_decides_them() {
    let cases = grading::challenge1::label_cases();
    assert_eq!(
        cases.len(),
        3,
        "every narrow network keeps its case: {cases:?}"
    );
    for (setup, card) in cases {
        assert!(!solution::fits(setup, card), "{setup}");
        assert!(solution::fits(setup, card + 4 * setup.batch), "{setup}");
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
fn forgetting_the_gradients_in_flight_fails() {
    fails_on(
        &grade(&answers_of!(no_gradients_in_flight), seed()),
        "fits",
        "two more",
    );
}

#[test]
fn forgetting_adams_square_roots_fails() {
    fails_on(
        &grade(&answers_of!(no_update_temporaries), seed()),
        "fits",
        "square roots",
    );
}

#[test]
fn leaving_out_only_the_gradients_fails() {
    for seed in [seed(), 1, 2, 3] {
        let report = grade(&answers_of!(only_the_gradients_missing), seed);
        fails_on(&report, "fits", "gradient");
        // The deep, wide setups at batch 32 are among the misses: they are what make the
        // mistake fail on any seed.
        assert!(
            report.misses().any(|c| {
                ["60", "58"].iter().any(|l| {
                    c.case
                        .contains(&format!("{l} hidden layers of width 5000, batch 32"))
                })
            }),
            "{report}"
        );
    }
}
