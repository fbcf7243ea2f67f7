//! Proofs that the graders grade (as rustlings does for its exercises): every reference
//! solution passes, every shipped stub fails as "not attempted", and plausible wrong answers
//! fail on the function they get wrong, with a hint that points at the mistake.
//!
//! If you solved an exercise in place, the stub proofs below fail because the stub is no
//! longer a stub: `git checkout -- exercises/` restores the shipped stubs.

mod common;
use common::*;
use grading::{Opt, Setup, challenge1_answers, challenge2_answers, seed};

#[path = "../../../exercises/challenge1/solution/answer.rs"]
mod solution1;
#[path = "../../../exercises/challenge2/solution/answer.rs"]
mod solution2;
#[path = "../../../exercises/challenge1/src/answer.rs"]
mod stub1;
#[path = "../../../exercises/challenge2/src/answer.rs"]
mod stub2;

mod challenge1 {
    use super::*;
    use grading::challenge1::grade;

    #[test]
    fn the_reference_solution_passes() {
        let report = grade(&challenge1_answers!(solution1), seed());
        assert!(report.passed(), "{report}");
        assert!(report.checks.len() >= 30, "{}", report.checks.len());
    }

    #[test]
    fn the_shipped_stub_is_not_attempted() {
        not_attempted(&grade(&challenge1_answers!(stub1), seed()));
    }

    /// Counting bits instead of bytes.
    mod bits {
        pub use crate::solution1::{fits, stored_activation_bytes};
        pub fn activation_bytes(batch: u64, width: u64) -> u64 {
            batch * width * 32
        }
    }

    /// Forgetting that an activation has one row per sample.
    mod no_batch {
        pub use crate::solution1::{activation_bytes, fits};
        pub fn stored_activation_bytes(_batch: u64, width: u64, layers: u64) -> u64 {
            layers * width * 4
        }
    }

    /// Forgetting the gradients (and optimizer state) in the equation.
    mod no_gradients {
        use super::*;
        pub use crate::solution1::{activation_bytes, stored_activation_bytes};
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
        pub use crate::solution1::{activation_bytes, stored_activation_bytes};
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
            &grade(&challenge1_answers!(bits), seed()),
            "activation_bytes",
            "bytes, not bits",
        );
    }

    #[test]
    fn ignoring_the_batch_fails() {
        fails_on(
            &grade(&challenge1_answers!(no_batch), seed()),
            "stored_activation_bytes",
            "batch × width",
        );
    }

    #[test]
    fn forgetting_gradients_fails() {
        fails_on(
            &grade(&challenge1_answers!(no_gradients), seed()),
            "fits",
            "gradients",
        );
    }

    #[test]
    fn one_activation_per_layer_fails() {
        fails_on(
            &grade(&challenge1_answers!(one_copy_per_layer), seed()),
            "fits",
            "exists twice",
        );
    }
}

mod challenge2 {
    use super::*;
    use grading::challenge2::grade;

    #[test]
    fn the_reference_solution_passes() {
        let report = grade(&challenge2_answers!(solution2), seed());
        assert!(report.passed(), "{report}");
        assert!(report.checks.len() >= 20, "{}", report.checks.len());
    }

    #[test]
    fn the_shipped_stub_is_not_attempted() {
        not_attempted(&grade(&challenge2_answers!(stub2), seed()));
    }

    /// Weights only.
    mod no_biases {
        pub use crate::solution2::{deepest_fit, model_bytes};
        pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
            inputs * width + (layers - 1) * width * width + width * classes
        }
    }

    /// Parameters only: no gradients, no optimizer state.
    mod no_gradients {
        use super::*;
        pub use crate::solution2::{deepest_fit, parameter_count};
        pub fn model_bytes(s: Setup) -> u64 {
            parameter_count(s.inputs, s.width, s.layers, s.classes) * 4
        }
    }

    /// Bits instead of bytes.
    mod bits {
        use super::*;
        pub use crate::solution2::{deepest_fit, parameter_count};
        pub fn model_bytes(s: Setup) -> u64 {
            let copies = if s.optimizer == Opt::Adam { 4 } else { 2 };
            parameter_count(s.inputs, s.width, s.layers, s.classes) * 32 * copies
        }
    }

    /// Only the model: as if a large batch cost nothing.
    mod no_activations {
        use super::*;
        pub use crate::solution2::{model_bytes, parameter_count};
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

    #[test]
    fn forgetting_biases_fails() {
        fails_on(
            &grade(&challenge2_answers!(no_biases), seed()),
            "parameter_count",
            "biases",
        );
    }

    #[test]
    fn forgetting_gradients_fails() {
        fails_on(
            &grade(&challenge2_answers!(no_gradients), seed()),
            "model_bytes",
            "gradient",
        );
    }

    #[test]
    fn bits_instead_of_bytes_fail() {
        fails_on(
            &grade(&challenge2_answers!(bits), seed()),
            "model_bytes",
            "4 bytes",
        );
    }

    #[test]
    fn ignoring_activations_fails() {
        fails_on(
            &grade(&challenge2_answers!(no_activations), seed()),
            "deepest_fit",
            "activation",
        );
    }
}
