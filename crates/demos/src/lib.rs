//! The instructor's demos of the book's five challenges, as a library: `cargo run -p
//! challengeN` runs [`challenge1::run`] and the others (each a thin program in
//! `demos/challengeN/`), and `crates/figures` quotes what they print and plan.
//!
//! The learner's side of each challenge is elsewhere: the stub in
//! `exercises/challengeN/src/answer.rs`, its grader in the `grading` crate.

pub mod challenge1;
pub mod challenge2;
pub mod challenge3;
pub mod challenge4;
pub mod challenge5;
