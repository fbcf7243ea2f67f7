//! The replay in the book's page: a snapshot's bytes and the page's fields in, what
//! `memviz replay --json` prints out — the same library call ([`gpumem_replay::replay`]),
//! the same report, the same text — so a learner asks about their own model in the browser,
//! with no build, and the file never leaves their machine.
//!
//! [`answer`] takes a [`Request`] as JSON and the file's bytes; it answers
//! `{"exit", "fits", "text", "command", "report"}` (`report`: the document `memviz replay
//! --json` prints, `exit`: its exit status) or `{"exit": 1, "error"}` with the command
//! line's message. The `extern "C"` functions in [`ffi`] carry it across WebAssembly.

pub mod ffi;
pub mod presets;
mod request;

pub use gpumem_replay::Progress;
pub use gpumem_replay::{DEFAULT_FRAMES, DOES_NOT_FIT};
pub use request::Request;

use gpumem::snapshot::Snapshot;
use serde_json::{Value, json};
use std::path::Path;

/// Its exit status for a file or setting it cannot use.
pub const REFUSED: u8 = 1;

/// A stage of the page's work, for its progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Reading the pickle: bytes so far, of all.
    Reading { at: u64, of: u64 },
    /// The replay's own progress.
    Replay(Progress),
}

/// The answer to `request` (JSON) about the snapshot in `file`, as JSON.
pub fn answer(request: &str, file: &[u8], progress: &mut dyn FnMut(Stage)) -> String {
    let value = match serde_json::from_str::<Request>(request) {
        Ok(r) => replay(&r, file, progress).unwrap_or_else(|e| refused(&e)),
        Err(e) => refused(&format!("the page's request is not understood: {e}")),
    };
    value.to_string()
}

/// The report for `request`, or the message `memviz replay` prints (after its `error: `).
pub fn replay(
    request: &Request,
    file: &[u8],
    progress: &mut dyn FnMut(Stage),
) -> Result<Value, String> {
    let mut settings = request.settings()?;
    let frames = request.frames()?;
    let snap = Snapshot::from_file_bytes(Path::new(&request.name), file, &mut |at, of| {
        progress(Stage::Reading { at, of });
    })
    .map_err(|e| e.to_string())?;
    let (asked, skipped) = resolve(request, &snap, settings.device);
    settings.largest_batch = asked.largest_batch;
    let report =
        gpumem_replay::replay_with_progress(&snap, &settings, &mut |p| progress(Stage::Replay(p)))
            .map_err(|e| e.to_string())?;
    let document = serde_json::to_value(&report).map_err(|e| format!("unprintable report: {e}"))?;
    Ok(json!({
        "exit": if report.fits { 0 } else { DOES_NOT_FIT },
        "fits": report.fits,
        "text": report.text(frames),
        "command": asked.command_line(),
        "args": asked.args(),
        "largest_batch_skipped": skipped,
        "report": document,
    }))
}

/// The request as the command line would put it: `--largest-batch` where the page asked for
/// it when possible and the file allows it; else the reason it was skipped.
fn resolve(request: &Request, snap: &Snapshot, device: Option<i64>) -> (Request, Option<String>) {
    let mut asked = Request {
        largest_batch_when_possible: false,
        ..request.clone()
    };
    let mut skipped = None;
    if request.largest_batch_when_possible && !request.largest_batch {
        match gpumem_replay::largest_batch_refusal(snap, device) {
            None => asked.largest_batch = true,
            Some(why) => skipped = Some(why),
        }
    }
    (asked, skipped)
}

pub(crate) fn refused(message: &str) -> Value {
    json!({ "exit": REFUSED, "error": message })
}

#[cfg(test)]
mod tests;
