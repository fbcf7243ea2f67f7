//! Proofs that challenge 1's grader grades (as rustlings does for its exercises): the
//! reference solution passes, the shipped stub fails as "not attempted", and plausible wrong
//! answers fail on the piece they get wrong, the first hint printed naming the missing term.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge1::answers_of;
use grading::challenge1::grade;
use grading::proofs::*;
use grading::{Setup, seed};

#[path = "../../../solutions/challenge1/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge1.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 50);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

#[test]
fn the_shipped_stub_is_not_attempted() {
    not_attempted(&grade(&answers_of!(stub), seed()));
}

#[test]
fn the_stubs_given_fits_waits_for_the_pieces() {
    given_waits_for_pieces(&grade(&answers_of!(stub), seed()), "fits");
}

/// A wrong piece: the solution with `$name` replaced, `fits` as the stub gives it.
macro_rules! wrong {
    ($module:ident, $name:ident, |$s:ident, $a:ident| $body:expr) => {
        mod $module {
            pub use crate::solution::*;
            use grading::Setup;
            use grading::given::{bottom_of_backward, model_bytes, update};
            pub fn $name($s: Setup) -> u64 {
                #[allow(unused_variables)]
                let $a = crate::solution::activation_bytes($s.batch, $s.width);
                $body
            }
            pub fn fits(setup: Setup, card_bytes: u64) -> bool {
                let busiest = top_of_backward(setup)
                    .max(bottom_of_backward(setup))
                    .max(update(setup));
                model_bytes(setup) + batch_bytes(setup) + busiest <= card_bytes
            }
        }
    };
}

wrong!(no_y_pred, batch_bytes, |s, a| s.batch * (s.inputs * 4 + 8));
wrong!(no_features, batch_bytes, |s, a| s.batch
    * (8 + s.classes * 4));
wrong!(four_byte_labels, batch_bytes, |s, a| s.batch
    * (s.inputs * 4 + 4 + s.classes * 4));
wrong!(no_labels, batch_bytes, |s, a| s.batch
    * (s.inputs * 4 + s.classes * 4));
wrong!(no_gradients_in_flight, top_of_backward, |s, a| s.layers * a
    + (s.width + 1) * s.classes * 4);
wrong!(one_gradient_in_flight, top_of_backward, |s, a| s.layers * a
    + a
    + (s.width + 1) * s.classes * 4);
wrong!(no_output_gradients, top_of_backward, |s, a| s.layers * a
    + 2 * a);
wrong!(no_output_bias_gradient, top_of_backward, |s, a| s.layers
    * a
    + 2 * a
    + s.width * s.classes * 4);
wrong!(every_gradient_at_the_top, top_of_backward, |s, a| s.layers
    * a
    + 2 * a
    + grading::given::parameter_bytes(s));

/// Each named mistake: the first hint printed names the term it lacks.
#[test]
fn the_first_hint_names_the_missing_term() {
    let cases = [
        (answers_of!(no_y_pred), "batch_bytes", "`y_pred` is missing"),
        (
            answers_of!(no_features),
            "batch_bytes",
            "features `x` are missing",
        ),
        (
            answers_of!(four_byte_labels),
            "batch_bytes",
            "int64 (8 bytes",
        ),
        (
            answers_of!(no_labels),
            "batch_bytes",
            "labels `y` are missing",
        ),
        (
            answers_of!(no_gradients_in_flight),
            "top_of_backward",
            "two batch × width gradients in flight are missing",
        ),
        (
            answers_of!(one_gradient_in_flight),
            "top_of_backward",
            "one batch × width tensor short",
        ),
        (
            answers_of!(no_output_gradients),
            "top_of_backward",
            "output layer's gradients G are missing",
        ),
        (
            answers_of!(no_output_bias_gradient),
            "top_of_backward",
            "bias gradient is missing",
        ),
        (
            answers_of!(every_gradient_at_the_top),
            "top_of_backward",
            "not the other layers' gradients",
        ),
        (answers_of!(bits), "activation_bytes", "bytes, not bits"),
    ];
    for (answers, function, term) in cases {
        for seed in [seed(), 1, 2] {
            first_hint_names(&grade(&answers, seed), function, term);
        }
    }
}

/// Counting bits instead of bytes.
mod bits {
    pub use crate::solution::{batch_bytes, fits, top_of_backward};
    pub fn activation_bytes(batch: u64, width: u64) -> u64 {
        batch * width * 32
    }
}

/// Forgetting that an activation has one row per sample.
mod no_batch {
    pub use crate::solution::{batch_bytes, fits, top_of_backward};
    pub fn activation_bytes(_batch: u64, width: u64) -> u64 {
        width * 4
    }
}

#[test]
fn ignoring_the_batch_fails() {
    first_hint_names(
        &grade(&answers_of!(no_batch), seed()),
        "activation_bytes",
        "batch × width × 4",
    );
}

/// A wrong piece makes the given `fits` miss too: its hint sends the learner to the piece.
#[test]
fn fits_sends_the_learner_to_the_wrong_piece() {
    let report = grade(&answers_of!(no_y_pred), seed());
    let fits: Vec<_> = report.misses().filter(|c| c.function == "fits").collect();
    assert!(!fits.is_empty(), "{report}");
    assert!(
        fits.iter()
            .all(|c| c.hint.contains("fix `batch_bytes` first")),
        "{report}"
    );
}

/// `fits` edited to leave out Adam's update: the pieces pass, `fits` misses with its own
/// hint.
mod no_update {
    pub use crate::solution::{activation_bytes, batch_bytes, top_of_backward};
    use grading::Setup;
    use grading::given::{bottom_of_backward, model_bytes};
    pub fn fits(setup: Setup, card_bytes: u64) -> bool {
        let busiest = top_of_backward(setup).max(bottom_of_backward(setup));
        model_bytes(setup) + batch_bytes(setup) + busiest <= card_bytes
    }
}

#[test]
fn a_fits_without_the_update_fails() {
    fails_on(
        &grade(&answers_of!(no_update), seed()),
        "fits",
        "square roots",
    );
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

/// The given equation is the one the page states: the pieces add up to what
/// `grading::given` says for the whole step.
#[test]
fn the_solution_s_pieces_are_the_given_terms() {
    for setup in [
        Setup::lesson(2000, 1, 1_173_000, grading::Opt::Sgd),
        Setup::lesson(5000, 30, 32, grading::Opt::Adam),
    ] {
        assert_eq!(
            solution::batch_bytes(setup),
            grading::given::batch_bytes(setup)
        );
        assert_eq!(
            solution::top_of_backward(setup),
            grading::given::top_of_backward(setup)
        );
    }
}
