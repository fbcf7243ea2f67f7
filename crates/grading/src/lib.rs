//! The book's graders, one module per challenge ([`challenge1`] … [`challenge5`]), and what
//! they share: calling a learner's function without crashing on `todo!()` ([`attempt`]), the
//! report it prints ([`Report`]), the setups the exercises talk about ([`Setup`]), what graders
//! ask the engine ([`measure`]) and what every proof of a grader asserts ([`proofs`]).
//!
//! A learner's folder (`exercises/challengeN/`) holds only their answer and a test that
//! calls `grading::challengeN::grade`; the reference solutions are in `solutions/`, and the
//! proofs that every grader grades (every solution passes, every shipped stub fails, named
//! wrong answers fail) are this crate's `tests/challengeN.rs`, behind the `proofs` feature.
//! The crate needs only the engine's planner and its cpu backing, so a learner's first
//! `cargo test` builds no GPU stack.
//!
//! Each exercise asks the learner for a few functions. A grader calls them on fixed and
//! random setups and compares what comes back with what the engine *measures* — allocator
//! statistics of planned or executed training steps — never with a copy of the formula.
//! Every check prints what was expected, what came back and a hint. A function that still
//! says `todo!()` is reported as "not attempted yet", not as a crash.

pub mod challenge1;
pub mod challenge2;
pub mod challenge3;
pub mod challenge4;
pub mod challenge5;
pub mod measure;
pub mod proofs;
mod report;
mod setup;

pub use report::{Check, Outcome, Report};
pub use setup::{Opt, Setup, card};

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

/// Why a learner's function gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoValue {
    /// Still the stub: `todo!()`.
    NotAttempted,
    /// It panicked; the message.
    Panicked(String),
}

/// Serialises panic-hook swaps across threads (tests run in parallel).
static HOOK: Mutex<()> = Mutex::new(());

/// Calls a learner's function, turning `todo!()` and other panics into values, without
/// printing a backtrace.
pub fn attempt<T>(f: impl FnOnce() -> T) -> Result<T, NoValue> {
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let previous = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    panic::set_hook(previous);
    result.map_err(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into());
        if msg.starts_with("not yet implemented") {
            NoValue::NotAttempted
        } else {
            NoValue::Panicked(msg)
        }
    })
}

/// The seed for a grader's random setups: `GRADER_SEED` if set (to replay a run), else a
/// fixed one so a learner sees the same cases each time.
pub fn seed() -> u64 {
    std::env::var("GRADER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2026)
}
