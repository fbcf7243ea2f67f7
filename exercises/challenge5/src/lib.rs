//! Challenge 5: more than one card — data parallel, ZeRO-1/2/3 (FSDP) and pipeline training.
//!
//! `cargo run -p challenge5` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.
//!
//! The demo is a library too ([`run`]), so that the book can quote what it prints.

// The learner's answer and the reference solution name the grader's types as
// `challenge5::grader::…`, here and in the proofs that include them.
extern crate self as challenge5;

pub mod answer;
mod cli;
pub mod grader;
mod grid;
mod instructor;

pub use instructor::run;

/// The learner's functions, for the grader.
pub fn answers() -> grader::Answers {
    answers_of!(answer)
}
