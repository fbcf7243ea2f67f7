//! Challenge 4: fitting more on the card — mixed precision, gradient accumulation, activation
//! checkpointing, float32 instead of float64.
//!
//! `cargo run -p challenge4` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.
//!
//! The demo is a library too ([`run`]), and so are its measurements ([`strategies`]): the
//! book's tables of each strategy's planned peak come from the same code.

// The learner's answer and the reference solution name the grader's types as
// `challenge4::grader::…`, here and in the proofs that include them.
extern crate self as challenge4;

pub mod answer;
mod cli;
pub mod grader;
mod instructor;
pub mod strategies;

pub use instructor::run;

/// The learner's functions, for the grader.
pub fn answers() -> grader::Answers {
    answers_of!(answer)
}
