//! Challenge 3: watching memory — allocated vs reserved, the timeline, leaks and the
//! allocator's knobs.
//!
//! `cargo run -p challenge3` is the instructor's demo; `src/answer.rs` is the learner's
//! exercise, graded by `cargo test` in this folder.

pub mod answer;

/// The learner's functions, for the grader.
pub fn answers() -> grading::challenge3::Answers {
    grading::challenge3_answers!(answer)
}
