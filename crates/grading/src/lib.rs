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
//! says `todo!()` is reported as "not attempted yet", not as a crash; a function the stub
//! gives (Challenge 1's `fits`) fails while a piece it adds says `todo!()`, and the report
//! asks for the pieces instead ([`Report::mark_given`]).

pub mod challenge1;
pub mod challenge2;
pub mod challenge3;
pub mod challenge4;
pub mod challenge5;
mod diagnose;
pub mod given;
pub mod measure;
pub mod parts;
pub mod proofs;
mod report;
mod setup;

pub use report::{Check, Outcome, Report};
pub use setup::{Opt, Setup, card};

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Mutex, Once};
use std::thread;
use std::time::Duration;

/// Why a learner's function gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoValue {
    /// Still the stub: `todo!()`.
    NotAttempted,
    /// It panicked; the message.
    Panicked(String),
    /// It did not return within the limit (an endless loop?): the limit.
    DidNotReturn(Duration),
}

impl NoValue {
    /// What the report shows as the learner's answer.
    pub fn got(&self) -> String {
        match self {
            NoValue::NotAttempted => "todo!()".into(),
            NoValue::Panicked(m) => format!("a panic: {m}"),
            NoValue::DidNotReturn(limit) => did_not_return(*limit),
        }
    }
}

/// `did not return within 5 s (an endless loop?)`.
pub fn did_not_return(limit: Duration) -> String {
    format!(
        "did not return within {} s (an endless loop?)",
        limit.as_secs_f64()
    )
}

/// How long a grader waits for one call of a learner's function: planned answers take
/// microseconds, so a call still running after this is a loop that never ends.
pub const TIME_LIMIT: Duration = Duration::from_secs(5);

thread_local! {
    /// Whether this thread is calling a learner's function: its panics print nothing.
    static SILENT: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once, a panic hook that stays quiet on threads calling a learner's function and
/// passes every other panic to the hook it replaces. Nothing is locked while the learner's
/// function runs, so one that never returns holds up no other call.
fn silence_learner_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !SILENT.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Calls a learner's function, turning `todo!()` and other panics into values, without
/// printing a backtrace.
pub fn attempt<T>(f: impl FnOnce() -> T) -> Result<T, NoValue> {
    silence_learner_panics();
    let was = SILENT.with(|s| s.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    SILENT.with(|s| s.set(was));
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

/// Like [`attempt`], but gives up after [`TIME_LIMIT`]: a learner's loop that never ends is
/// reported, not waited on forever. `function` names the learner's function (its address, as
/// `answers.fits as usize`): once one call of it has not returned, later calls are not made
/// (each would leave one more thread spinning) and report the same. Every grader's call goes
/// through it but Challenge 3's training loop, which runs on the grader's model in place.
pub fn attempt_timed<T: Send + 'static>(
    function: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NoValue> {
    attempt_within(TIME_LIMIT, function, f)
}

/// The learner's functions that did not return: their addresses.
static HUNG: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// [`attempt_timed`] with another limit (the proofs use a short one).
pub fn attempt_within<T: Send + 'static>(
    limit: Duration,
    function: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NoValue> {
    let hung = || HUNG.lock().unwrap_or_else(|e| e.into_inner());
    if hung().contains(&function) {
        return Err(NoValue::DidNotReturn(limit));
    }
    let (send, receive) = mpsc::channel();
    // A thread of its own: the grade goes on while an endless loop spins (it ends with the
    // process). `attempt` inside it keeps its panics quiet.
    let spawned = thread::Builder::new().spawn(move || {
        // The grader may have stopped waiting: nobody to tell then.
        let _ = send.send(attempt(f));
    });
    if let Err(e) = spawned {
        return Err(NoValue::Panicked(format!("could not start a thread: {e}")));
    }
    receive.recv_timeout(limit).unwrap_or_else(|_| {
        hung().push(function);
        Err(NoValue::DidNotReturn(limit))
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
