//! Challenge 3: watching memory — allocated vs reserved, the timeline, leaks and the
//! allocator's knobs.
//!
//! `cargo run -p challenge3` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.
//!
//! The demo is a library too, so that the book quotes what it prints: its training loop
//! ([`runner`]), each scenario's runs ([`leak`], [`fragmentation`]) and its settings after a
//! scenario's defaults ([`Setup`], [`Scenario::planned`]).

// The learner's answer and the reference solution name the grader's types as
// `challenge3::grader::…`, here and in the proofs that include them.
extern crate self as challenge3;

pub mod answer;
pub mod fragmentation;
pub mod grader;
mod instructor;
pub mod leak;
pub mod runner;
mod watch;

pub(crate) use instructor::write_timeline;
pub use instructor::{Scenario, Setup, run};

/// The learner's functions, for the grader.
pub fn answers() -> grader::Answers {
    answers_of!(answer)
}
