//! Challenge 1: the whole training set as one batch.
//!
//! `cargo run -p challenge1` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.
//!
//! The demo is a library too ([`run`]), so that the book can quote what it prints.

pub mod answer;
pub mod grader;
mod instructor;

pub use instructor::run;

/// The learner's functions, for the grader.
pub fn answers() -> grader::Answers {
    answers_of!(answer)
}
