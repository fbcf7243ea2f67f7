//! Challenge 4: fitting more on the card — mixed precision, gradient accumulation, activation
//! checkpointing, float32 instead of float64.
//!
//! `cargo run -p challenge4` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.

pub mod answer;

/// The learner's functions, for the grader.
pub fn answers() -> grading::challenge4::Answers {
    grading::challenge4_answers!(answer)
}
