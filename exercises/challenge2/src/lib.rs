//! Challenge 2: how deep can the network grow before the card runs out?
//!
//! `cargo run -p challenge2` is the instructor's demo; `src/answer.rs` is the learner's
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
