//! Challenge 4: fitting more on the card — mixed precision, gradient accumulation, activation
//! checkpointing, float32 instead of float64.
//!
//! `cargo run -p challenge4` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.
//!
//! The demo is a library too ([`run`]), and so are its measurements ([`strategies`]): the
//! book's tables of each strategy's planned peak come from the same code.

pub mod answer;
mod instructor;
pub mod strategies;

pub use instructor::run;

/// The learner's functions, for the grader.
pub fn answers() -> grading::challenge4::Answers {
    grading::challenge4_answers!(answer)
}
