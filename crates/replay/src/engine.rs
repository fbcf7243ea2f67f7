//! The replay itself: a plan's operations through the engine's caching allocator (PyTorch's
//! rules) on an emulated card, watching what `memory_allocated()` and `memory_reserved()`
//! would read, until the trace ends or a request cannot be served.

use crate::error::{ReplayError, Result, refuse};
use crate::source::{Op, Plan, Size};
use gpumem::alloc::{
    AllocError, Allocator, AllocatorConfig, BlockAddr, History, OomMessage, OutOfMemory,
    SegmentStore, StoreError,
};
use gpumem::snapshot::{Frames, Snapshot, build};

/// The card a replay runs on (not gpumem's preset `lesson::Card`): nothing but its numbers
/// (the allocator's config holds its capacity and the memory outside the allocator).
#[derive(Debug, Clone)]
pub struct ReplayCard {
    pub config: AllocatorConfig,
    /// The message's form and the exception's name, of the PyTorch asked for.
    pub message: OomMessage,
    pub exception: &'static str,
}

/// A segment store that holds nothing: the card is emulated by the allocator's capacity.
#[derive(Debug)]
struct Nothing;

impl SegmentStore for Nothing {
    fn create_segment(&mut self, _: u64, _: u64) -> std::result::Result<(), StoreError> {
        Ok(())
    }
    fn release_segment(&mut self, _: u64) {}
}

/// The request that could not be served.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The trace entry of the request (`None`: a workspace the replay added, or a tensor
    /// alive before the trace).
    pub entry: Option<usize>,
    pub slot: usize,
    pub oom: OutOfMemory,
}

/// The moment `memory_allocated()` first reached its peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtPeak {
    pub entry: Option<usize>,
    pub allocated: u64,
    pub reserved: u64,
    pub largest_free_block: u64,
}

/// What one replay found.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub batch: u64,
    pub failure: Option<Failure>,
    /// The run ran out of memory at this entry, and on this card the request fits: what the
    /// program did after its error is not in the trace, so the replay stops there.
    pub source_oom_fits: Option<usize>,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    pub at_peak: AtPeak,
    pub end_allocated: u64,
    pub end_reserved: u64,
    pub snapshot: Option<Snapshot>,
}

impl Outcome {
    pub fn fits(&self) -> bool {
        self.failure.is_none()
    }
}

/// Bytes of `size` at `batch` rows, refused where the affine form leaves the bytes.
pub fn bytes_at(size: Size, batch: u64) -> Result<u64> {
    let b = i64::try_from(batch).ok();
    let v = b
        .and_then(|b| size.per_row.checked_mul(b))
        .and_then(|v| v.checked_add(size.at_zero));
    match v {
        Some(v) if v >= 0 && (v as u64) < crate::source::ABSURD => Ok(v as u64),
        Some(v) if v < 0 => refuse!(
            Batch,
            "at batch {batch} an allocation of {} + {} × batch bytes would be negative: the \
             affine form does not reach down there",
            size.at_zero,
            size.per_row
        ),
        _ => refuse!(
            Batch,
            "at batch {batch} an allocation of {} + {} × batch bytes is over a pebibyte: no card \
             holds it",
            size.at_zero,
            size.per_row
        ),
    }
}

/// An allocator's failure other than running out of memory.
fn failed(e: impl std::fmt::Display) -> ReplayError {
    ReplayError::Allocator(e.to_string())
}

/// How often (in operations) the progress callback hears of it.
const PROGRESS_EVERY: usize = 1 << 16;

/// Replays `plan` at `batch` on `card`; with `snapshot`, keeps the allocator's history and
/// returns it as PyTorch's snapshot, each block named by the trace's own frames.
pub fn run(
    plan: &Plan,
    batch: u64,
    card: &ReplayCard,
    snapshot: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Outcome> {
    let mut alloc = Allocator::new(Nothing, card.config.clone()).map_err(failed)?;
    if snapshot {
        alloc.record_memory_history(true, History::UNBOUNDED);
    }
    let mut blocks: Vec<Option<BlockAddr>> = vec![None; plan.frames.len()];
    let mut at_peak = AtPeak::default();
    let mut failure = None;
    let mut source_oom_fits = None;
    for (k, op) in plan.ops.iter().enumerate() {
        if k % PROGRESS_EVERY == 0 {
            progress(k, plan.ops.len());
        }
        let (slot, bytes, entry) = match *op {
            Op::Alloc { slot, size, entry } => (slot, bytes_at(size, batch)?, entry),
            Op::Free { slot, .. } => {
                if let Some(b) = blocks[slot].take() {
                    alloc.free(b).map_err(failed)?;
                }
                continue;
            }
            Op::EmptyCache { .. } => {
                alloc.empty_cache();
                continue;
            }
            Op::SourceOom { slot, bytes, entry } => (slot, bytes, Some(entry)),
        };
        if bytes == 0 {
            continue; // PyTorch hands out no block for zero bytes
        }
        match alloc.malloc(bytes, &format!("#{slot}")) {
            Ok(b) if matches!(op, Op::SourceOom { .. }) => {
                alloc.free(b).map_err(failed)?;
                source_oom_fits = entry;
                break;
            }
            Ok(b) => blocks[slot] = Some(b),
            Err(AllocError::OutOfMemory(o)) => {
                let mut oom = o.with_message(card.message);
                oom.label = plan.label(slot).to_string();
                failure = Some(Failure { entry, slot, oom });
                break;
            }
            Err(e) => return Err(failed(e)),
        }
        if alloc.allocated() > at_peak.allocated {
            at_peak = AtPeak {
                entry,
                allocated: alloc.allocated(),
                reserved: alloc.reserved(),
                largest_free_block: alloc.largest_free_block(),
            };
        }
    }
    progress(plan.ops.len(), plan.ops.len());
    let stats = alloc.stats();
    let snapshot = snapshot.then(|| named(plan, &alloc));
    Ok(Outcome {
        batch,
        failure,
        source_oom_fits,
        peak_allocated: stats.allocated_bytes.all.peak,
        peak_reserved: stats.reserved_bytes.all.peak,
        at_peak,
        end_allocated: alloc.allocated(),
        end_reserved: alloc.reserved(),
        snapshot,
    })
}

/// The allocator's state and history as a snapshot, each `#slot` label replaced by the
/// trace's own frames for that tensor.
fn named(plan: &Plan, alloc: &Allocator<Nothing>) -> Snapshot {
    let history = alloc.memory_history().map(|h| h.events());
    let mut snap = build::snapshot(
        &alloc.segments(),
        history.into_iter().flatten(),
        alloc.config(),
    );
    let frames = |f: &mut Frames| {
        let slot = f
            .first()
            .and_then(|f| f.name.strip_prefix('#'))
            .and_then(|s| s.parse::<usize>().ok());
        if let Some(named) = slot.and_then(|s| plan.frames.get(s)) {
            *f = named.clone();
        }
    };
    for e in snap.device_traces.iter_mut().flatten() {
        frames(&mut e.frames);
    }
    for s in &mut snap.segments {
        frames(&mut s.frames);
        for b in &mut s.blocks {
            frames(&mut b.frames);
        }
    }
    snap
}
