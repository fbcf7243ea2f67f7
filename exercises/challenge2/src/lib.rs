//! Challenge 2: how deep can the network grow before the card runs out?
//!
//! `cargo run -p challenge2` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.

pub mod answer;

/// The learner's functions, for the grader.
pub fn answers() -> grading::challenge2::Answers {
    grading::challenge2_answers!(answer)
}
