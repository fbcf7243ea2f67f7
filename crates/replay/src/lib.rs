//! A snapshot's trace replayed through the engine's caching allocator (PyTorch's rules) on
//! any card and allocator settings: a [`Snapshot`] and [`ReplaySettings`] in, a
//! [`ReplayReport`] out. It answers whether the step fits, or the out-of-memory error
//! PyTorch would raise (in the asked version's words) at which trace entry, for which tensor
//! and from where; the peaks `max_memory_allocated()` and `max_memory_reserved()` would
//! read; what is cached but unused at the peak; and, for a trace `pytorch/record.py` wrote,
//! any batch from its affine form, with the cuBLAS workspaces a GPU would add.
//!
//! No clap, no files, no threads: `memviz replay` parses its flags and reads the file, the
//! book's page will hand it bytes; both get the same report and the same text.

mod engine;
mod error;
mod largest;
mod notes;
mod report;
mod settings;
mod source;
mod text;
mod workspaces;

pub use error::ReplayError;

/// The exit status of a replay whose step does not fit the card (`memviz replay`'s, and the
/// page's `exit`), so that a script can branch on it.
pub const DOES_NOT_FIT: u8 = 3;

/// The stack frames the text shows for the tensor that did not fit, unless asked.
pub const DEFAULT_FRAMES: usize = 6;
pub use largest::{Largest, MAX_BATCH};
pub use notes::Note;
pub use report::{
    AtPeak, CardReport, End, Failure, LargestBatch, ReplayReport, Workspace, Workspaces,
};
pub use settings::ReplaySettings;
pub use source::Kind;

use error::{Result, refuse};
use gpumem::snapshot::Snapshot;
use source::{Op, Plan};

/// How far a replay is, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The replay at the asked batch: operations done, of all.
    Replaying { done: usize, of: usize },
    /// The largest batch's search: replays so far, and the batch tried.
    Searching { replays: usize, batch: u64 },
}

/// Replays `snap` as `settings` ask.
pub fn replay(snap: &Snapshot, settings: &ReplaySettings) -> Result<ReplayReport> {
    replay_with_progress(snap, settings, &mut |_| {})
}

/// Replays the snapshot in `pickle` (what `torch.cuda.memory._dump_snapshot` writes).
pub fn replay_pickle(pickle: &[u8], settings: &ReplaySettings) -> Result<ReplayReport> {
    replay(&Snapshot::from_pickle(pickle)?, settings)
}

/// [`replay`], telling `progress` how far it is now and then.
pub fn replay_with_progress(
    snap: &Snapshot,
    settings: &ReplaySettings,
    progress: &mut dyn FnMut(Progress),
) -> Result<ReplayReport> {
    let device = source::device(snap, settings.device)?;
    let mut plan = source::plan(snap, device)?;
    let setup = settings.setup(snap, &plan)?;
    let mut added = workspaces::add(&mut plan, setup.workspaces);
    added.measured_on = setup.workspaces_measured.clone();
    // Counted with the workspaces added, as the JSON has always counted them.
    let allocations = plan
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Alloc { .. }))
        .count();
    let batch = batch(settings.batch, &plan)?;
    let outcome = engine::run(
        &plan,
        batch,
        &setup.card,
        settings.keep_snapshot,
        &mut |done, of| progress(Progress::Replaying { done, of }),
    )?;
    let largest = if settings.largest_batch {
        let (l, runs) = largest::largest(&plan, &setup.card, &mut |replays, batch| {
            progress(Progress::Searching { replays, batch });
        })?;
        Some(LargestBatch::of(l, runs))
    } else {
        None
    };
    let mut notes = setup.notes.clone();
    notes.extend(notes::of_plan(&plan));
    notes.extend(snap.recorder.iter().flat_map(notes::of_recorder));
    Ok(report::build(report::Parts {
        name: &settings.name,
        plan: &plan,
        allocations,
        setup: &setup,
        workspaces: added,
        outcome,
        largest,
        notes,
    }))
}

/// Why `--largest-batch` would be refused for the trace of `device` in `snap` (a GPU's trace,
/// or bytes not affine in the batch), or None when it can be searched: for a caller that
/// searches only where it can (the book's page does by default).
pub fn largest_batch_refusal(snap: &Snapshot, device: Option<i64>) -> Option<String> {
    let plan = source::device(snap, device).and_then(|d| source::plan(snap, d));
    match plan.and_then(|p| largest::searchable(&p)) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// The batch to replay: the one asked, where the trace allows another than its own.
fn batch(asked: Option<u64>, plan: &Plan) -> Result<u64> {
    Ok(match (asked, plan.batch) {
        (Some(b), Some(rec)) if b != rec => {
            if let Some(why) = &plan.not_affine {
                refuse!(
                    Batch,
                    "--batch {b}: this trace was recorded at batch {rec} and its bytes are not \
                     affine in the batch ({why}); record it again at {b} \
                     (python pytorch/record.py TEMPLATE --batch {b})"
                );
            }
            b
        }
        (Some(b), None) => refuse!(
            Batch,
            "--batch {b}: a GPU's trace holds the batch it ran with; only a trace recorded by \
             pytorch/record.py (with its affine form) can be asked another"
        ),
        (_, rec) => rec.unwrap_or(0),
    })
}
