//! A recorded history of the allocator's events, like PyTorch's
//! `torch.cuda.memory._record_memory_history`, for timelines and for comparing backings.

use crate::role::Role;
use serde::{Deserialize, Serialize};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A block was handed out.
    Alloc,
    /// A block was given back to the cache.
    Free,
    /// A segment was taken from the device.
    SegmentAlloc,
    /// A segment was given back to the device.
    SegmentFree,
    /// Pages were mapped into an expandable segment (`cuMemMap`).
    SegmentMap,
    /// Pages of an expandable segment were unmapped and given back (`cuMemUnmap`).
    SegmentUnmap,
    /// A request could not be served.
    Oom,
}

/// One event, with the allocator's totals right after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub kind: EventKind,
    /// Address of the block or segment (the allocator's own address space, the same on
    /// every backing).
    pub addr: u64,
    /// Bytes of the block or segment (for `Oom`: the segment size that was tried).
    pub size: u64,
    /// Bytes the caller asked for (blocks and `Oom`), 0 for segments.
    pub requested: u64,
    /// What the memory is for, for people, e.g. `layer2.weight` or `z1`.
    pub label: String,
    /// What the memory is for, typed: the role of the tensor (for segment events, of the
    /// request that caused them); `None` for memory allocated without one (the allocator
    /// on its own), and in a trace read back from JSON, which leaves it out.
    #[serde(skip)]
    pub role: Option<Role>,
    /// `memory_allocated()` after the event.
    pub allocated: u64,
    /// `memory_reserved()` after the event.
    pub reserved: u64,
}

/// A list of events that can be saved as JSON and read back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub events: Vec<TraceEvent>,
}

impl Trace {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a trace is plain data and always serialises")
    }

    pub fn from_json(s: &str) -> Result<Trace, serde_json::Error> {
        serde_json::from_str(s)
    }

    /// The highest `allocated` over the trace.
    pub fn peak_allocated(&self) -> u64 {
        self.events.iter().map(|e| e.allocated).max().unwrap_or(0)
    }

    /// The highest `reserved` over the trace.
    pub fn peak_reserved(&self) -> u64 {
        self.events.iter().map(|e| e.reserved).max().unwrap_or(0)
    }

    pub fn count(&self, kind: EventKind) -> usize {
        self.events.iter().filter(|e| e.kind == kind).count()
    }
}
