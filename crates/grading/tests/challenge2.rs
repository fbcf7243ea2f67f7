//! Proofs that challenge 2's grader grades (as rustlings does for its exercises): the
//! reference solution passes, the shipped stub fails as "not attempted", and plausible wrong
//! answers fail on the piece they get wrong, the first hint printed naming the missing term.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge2::answers_of;
use grading::challenge2::grade;
use grading::proofs::*;
use grading::seed;

#[path = "../../../solutions/challenge2/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge2.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 35);
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
fn the_stubs_given_deepest_fit_waits_for_the_pieces() {
    given_waits_for_pieces(&grade(&answers_of!(stub), seed()), "deepest_fit");
}

/// A wrong piece: the solution with `$name` replaced, `deepest_fit` as the stub gives it.
macro_rules! wrong {
    ($module:ident, $name:ident, |$($arg:ident),*| $body:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use grading::{Opt, Setup};
            use grading::given::{batch_bytes, bottom_of_backward, top_of_backward};
            pub use crate::solution::*;
            #[allow(unused_variables)]
            pub fn $name($($arg: wrong!(@type $arg)),*) -> u64 {
                $body
            }
            pub fn deepest_fit(setup: Setup, card_bytes: u64) -> u64 {
                let fits = |layers| {
                    let s = Setup { layers, ..setup };
                    let busiest = top_of_backward(s).max(bottom_of_backward(s)).max(update(s));
                    model_bytes(s) + batch_bytes(s) + busiest <= card_bytes
                };
                let mut layers = 0;
                while fits(layers + 1) {
                    layers += 1;
                }
                layers
            }
        }
    };
    (@type s) => { Setup };
    (@type $other:ident) => { u64 };
}

/// `P` in bytes, as the solution counts it.
fn p(s: grading::Setup) -> u64 {
    solution::parameter_count(s.inputs, s.width, s.layers, s.classes) * 4
}

wrong!(
    no_biases,
    parameter_count,
    |inputs, width, layers, classes| inputs * width
        + (layers - 1) * width * width
        + width * classes
);
wrong!(
    no_output_layer,
    parameter_count,
    |inputs, width, layers, classes| (inputs + 1) * width + (layers - 1) * (width + 1) * width
);
wrong!(model_with_gradients, model_bytes, |s| {
    let copies = if s.optimizer == Opt::Adam { 4 } else { 2 };
    copies * crate::p(s)
});
wrong!(adam_one_copy, model_bytes, |s| {
    let copies = if s.optimizer == Opt::Adam { 2 } else { 1 };
    copies * crate::p(s)
});
wrong!(model_bits, model_bytes, |s| {
    let copies = if s.optimizer == Opt::Adam { 3 } else { 1 };
    copies * crate::p(s) * 8
});
wrong!(no_square_roots, update, |s| crate::p(s));
wrong!(update_without_gradients, update, |s| {
    if s.optimizer == Opt::Adam {
        crate::p(s)
    } else {
        0
    }
});

/// Each named mistake: the first hint printed names the term it lacks.
#[test]
fn the_first_hint_names_the_missing_term() {
    let cases = [
        (
            answers_of!(no_biases),
            "parameter_count",
            "biases are missing",
        ),
        (
            answers_of!(no_output_layer),
            "parameter_count",
            "output layer is missing",
        ),
        (
            answers_of!(model_with_gradients),
            "model_bytes",
            "without the gradients",
        ),
        (
            answers_of!(adam_one_copy),
            "model_bytes",
            "two running averages",
        ),
        (answers_of!(model_bits), "model_bytes", "bytes, not bits"),
        (
            answers_of!(no_square_roots),
            "update",
            "square roots R are missing",
        ),
        (
            answers_of!(update_without_gradients),
            "update",
            "the gradients are missing",
        ),
    ];
    for (answers, function, term) in cases {
        for seed in [seed(), 1, 2] {
            first_hint_names(&grade(&answers, seed), function, term);
        }
    }
}

/// A wrong piece makes the given `deepest_fit` miss too: its hint sends the learner to the
/// piece.
#[test]
fn deepest_fit_sends_the_learner_to_the_wrong_piece() {
    let report = grade(&answers_of!(no_square_roots), seed());
    let deep: Vec<_> = report
        .misses()
        .filter(|c| c.function == "deepest_fit")
        .collect();
    assert!(!deep.is_empty(), "{report}");
    assert!(
        deep.iter().all(|c| c.hint.contains("fix `update` first")),
        "{report}"
    );
}

/// The given search with its step never taken: `layers += 0` loops for ever whenever one
/// layer fits.
mod endless_loop {
    pub use crate::solution::{model_bytes, parameter_count, update};
    use grading::Setup;
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
