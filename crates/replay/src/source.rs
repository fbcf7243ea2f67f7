//! A snapshot's trace as the replay's list of operations: every tensor's allocation and
//! free, in the trace's order, with the tensors alive before the trace began allocated first.
//!
//! The rules, each from what PyTorch's allocator writes into a trace:
//! - a block is given back to the cache at `free_completed` (`free_requested` is the tensor's
//!   death in Python; on one stream the two are adjacent, across streams the block waits);
//! - a `free_completed` with no `alloc` before it was alive when the trace began (its ring
//!   buffer had dropped the `alloc`), as PyTorch's viewer reads it; so is an active block of
//!   the dump never allocated in the trace. Such a block is checked against the segments the
//!   trace began with (the dump's, and those the trace frees without allocating);
//! - a run of `segment_free` / `segment_unmap` entries not followed by the allocator getting
//!   memory (`segment_alloc`, `segment_map`, `oom`) is `empty_cache()`, replayed; one that is
//!   followed by it is the allocator's own retry or garbage collection, which the replay's
//!   allocator does by its own rules on its own card;
//! - an `oom` entry is a request the run could not serve: the replay asks for it too.
//!
//! A trace the recorder (`pytorch/record.py`) wrote is complete from the start: its segment
//! entries are its own addressing, not an allocator's, and a free it never allocated is an
//! error. Its bytes may be affine in the batch, and a GPU's cuBLAS workspaces are added.

mod walk;

pub use walk::plan;

use crate::error::{Result, refuse};
use gpumem::snapshot::{Frames, Snapshot, frames_name};

/// No GPU holds a pebibyte: a larger request is a corrupt trace, not a question of cards.
pub const ABSURD: u64 = 1 << 50;

/// Bytes of an allocation at B rows: `at_zero + per_row × B`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub at_zero: i64,
    pub per_row: i64,
}

impl Size {
    pub fn fixed(bytes: u64) -> Size {
        Size {
            at_zero: bytes as i64,
            per_row: 0,
        }
    }
}

/// One thing the replay does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Tensor `slot` is allocated (at trace entry `entry`; `None`: before the trace, or a
    /// workspace the replay adds).
    Alloc {
        slot: usize,
        size: Size,
        entry: Option<usize>,
    },
    Free {
        slot: usize,
        entry: Option<usize>,
    },
    /// `empty_cache()` in the run, at this entry.
    EmptyCache {
        entry: usize,
    },
    /// The run could not serve a request of `bytes` (rounded) here; `slot` names it.
    SourceOom {
        slot: usize,
        bytes: u64,
        entry: usize,
    },
}

/// Which kind of trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Written by `pytorch/record.py`: no GPU's workspaces in it.
    Recorded,
    /// A GPU's (PyTorch's `_dump_snapshot`, or a demo's `--memory-snapshot`): its workspaces
    /// are already in it.
    Gpu,
}

/// The trace, ready to replay.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: Kind,
    pub device: i64,
    pub ops: Vec<Op>,
    /// Each slot's frames (what it is, where it was made).
    pub frames: Vec<Frames>,
    /// The batch the trace was recorded at, for a recorded trace.
    pub batch: Option<u64>,
    /// Why the bytes are not affine in the batch, when they are not.
    pub not_affine: Option<String>,
    pub entries: usize,
    pub alive_at_start: usize,
    /// `empty_cache()` calls replayed; runs of segment frees left to the allocator.
    pub empty_caches: usize,
    pub own_releases: usize,
    /// Allocations CUDA keeps on the host (skipped) and their bytes at the recorded batch.
    pub on_host: (usize, u64),
    /// Frees requested but never completed by the trace's end (blocks still waiting).
    pub pending: usize,
}

impl Plan {
    /// The label of `slot`: its first frame's name.
    pub fn label(&self, slot: usize) -> &str {
        self.frames
            .get(slot)
            .and_then(|f| frames_name(f))
            .unwrap_or("(unnamed)")
    }

    /// Whether any allocation grows with the batch.
    pub fn grows(&self) -> bool {
        self.ops
            .iter()
            .any(|o| matches!(o, Op::Alloc { size, .. } if size.per_row != 0))
    }
}

/// The one device whose trace to replay: `device`, or the only one with a trace.
pub fn device(snap: &Snapshot, asked: Option<i64>) -> Result<i64> {
    let with_trace: Vec<i64> = (0..snap.device_traces.len() as i64)
        .filter(|&d| !snap.trace(d).is_empty())
        .collect();
    match (asked, with_trace.as_slice()) {
        (Some(d), _) if with_trace.contains(&d) => Ok(d),
        (Some(d), _) => {
            refuse!(
                Device,
                "device {d} has no trace to replay (devices with one: {with_trace:?})"
            )
        }
        (None, [d]) => Ok(*d),
        (None, []) => refuse!(
            Device,
            "the snapshot has no trace: record one with torch.cuda.memory._record_memory_history() \
             before the step (or with pytorch/record.py), then dump it"
        ),
        (None, many) => refuse!(
            Device,
            "the snapshot has traces for {} devices ({many:?}); the replay runs one card: pick \
             it with --device N",
            many.len()
        ),
    }
}
