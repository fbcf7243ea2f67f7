//! The allocator's memory history, PyTorch's `torch.cuda.memory._record_memory_history`: once
//! enabled it keeps every event the allocator records, up to `max_entries` (the oldest are
//! dropped first, as PyTorch's ring buffer does), for a snapshot to carry.
//!
//! It is separate from [`Trace`](super::Trace) on purpose: a trace is started and taken by
//! whoever is measuring (and restarted between phases), while the history runs from the
//! moment it is enabled to the moment a snapshot is dumped, whatever else is traced.

use super::{Allocator, EventKind, SegmentStore, TraceEvent};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One recorded event, with what a snapshot needs beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEvent {
    #[serde(flatten)]
    pub event: TraceEvent,
    /// The event's place in the history since it was enabled, from 0. It stays with the
    /// event when older ones are dropped, so it orders events across a whole run (the
    /// snapshot writes it as `time_us`: the engine has no clock that means anything on
    /// `plan`).
    pub seq: u64,
    /// For [`EventKind::Oom`]: the device's free bytes when the request failed, as
    /// `cudaMemGetInfo` reports them to PyTorch's trace; `None` for other events or when the
    /// backing cannot tell.
    #[serde(default)]
    pub device_free: Option<u64>,
}

/// The events recorded since the history was enabled, at most `max_entries` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    max_entries: usize,
    events: VecDeque<HistoryEvent>,
    next_seq: u64,
}

impl History {
    /// PyTorch's default `max_entries` (`sys.maxsize`): keep everything.
    pub const UNBOUNDED: usize = usize::MAX;

    /// A history keeping at most `max_entries` events (at least one, as PyTorch's).
    pub fn new(max_entries: usize) -> History {
        History {
            max_entries: max_entries.max(1),
            events: VecDeque::new(),
            next_seq: 0,
        }
    }

    /// Appends `event`, dropping the oldest when full.
    pub fn push(&mut self, event: TraceEvent, device_free: Option<u64>) {
        if self.events.len() == self.max_entries {
            self.events.pop_front();
        }
        self.events.push_back(HistoryEvent {
            event,
            seq: self.next_seq,
            device_free,
        });
        self.next_seq += 1;
    }

    /// The kept events, oldest first.
    pub fn events(&self) -> impl ExactSizeIterator<Item = &HistoryEvent> {
        self.events.iter()
    }

    /// Events recorded since enabling, including those dropped.
    pub fn recorded(&self) -> u64 {
        self.next_seq
    }

    /// Events dropped because the history was full.
    pub fn dropped(&self) -> u64 {
        self.next_seq - self.events.len() as u64
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }
}

impl<S: SegmentStore> Allocator<S> {
    /// `_record_memory_history(enabled="all", max_entries=…)` when `enabled`: starts (or
    /// keeps) recording, keeping at most `max_entries` events; `_record_memory_history(None)`
    /// when not: stops and forgets what was recorded.
    pub fn record_memory_history(&mut self, enabled: bool, max_entries: usize) {
        self.history = match (enabled, self.history.take()) {
            (false, _) => None,
            (true, Some(mut h)) => {
                h.max_entries = max_entries.max(1);
                while h.events.len() > h.max_entries {
                    h.events.pop_front();
                }
                Some(h)
            }
            (true, None) => Some(History::new(max_entries)),
        };
    }

    /// The history, if it is being recorded.
    pub fn memory_history(&self) -> Option<&History> {
        self.history.as_ref()
    }

    /// Adds an event to the history, if one is recorded: called by `record` for every event.
    pub(super) fn record_history(
        &mut self,
        kind: EventKind,
        addr: u64,
        size: u64,
        requested: u64,
        (label, role): super::Tag<'_>,
    ) {
        if self.history.is_none() {
            return;
        }
        let device_free = match kind {
            EventKind::Oom => self.free_on_device(),
            _ => None,
        };
        let event = TraceEvent {
            kind,
            addr,
            size,
            requested,
            label: label.to_string(),
            role,
            allocated: self.allocated(),
            reserved: self.reserved(),
        };
        if let Some(h) = &mut self.history {
            h.push(event, device_free);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{AllocatorConfig, BlockAddr};
    use crate::segments::HostStore;

    fn allocator(capacity: u64) -> Allocator<HostStore> {
        let config = AllocatorConfig {
            capacity: Some(capacity),
            ..Default::default()
        };
        Allocator::new(HostStore::default(), config).expect("valid settings")
    }

    fn kinds(a: &Allocator<HostStore>) -> Vec<EventKind> {
        let h = a.memory_history().expect("recording");
        h.events().map(|e| e.event.kind).collect()
    }

    #[test]
    fn records_every_event_whatever_the_trace_does() {
        let mut a = allocator(64 << 20);
        a.record_memory_history(true, History::UNBOUNDED);
        let x = a.malloc(1000, "x").expect("fits");
        a.start_trace();
        a.free(x).expect("allocated");
        let _ = a.take_trace();
        a.start_trace();
        a.empty_cache();
        assert_eq!(
            kinds(&a),
            [
                EventKind::SegmentAlloc,
                EventKind::Alloc,
                EventKind::Free,
                EventKind::SegmentFree
            ]
        );
        let h = a.memory_history().expect("recording");
        let first = h.events().next().expect("one event");
        assert_eq!(first.event.label, "x");
        assert_eq!(first.event.reserved, 2 << 20, "a small segment: 2 MiB");
        assert_eq!(h.events().map(|e| e.seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn keeps_the_newest_max_entries() {
        let mut a = allocator(64 << 20);
        a.record_memory_history(true, 3);
        let x = a.malloc(1000, "x").expect("fits");
        a.free(x).expect("allocated");
        let y = a.malloc(1000, "y").expect("fits");
        let h = a.memory_history().expect("recording");
        assert_eq!(h.recorded(), 4);
        assert_eq!(h.dropped(), 1);
        assert_eq!(h.events().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        a.free(y).expect("allocated");
        a.record_memory_history(false, History::UNBOUNDED);
        assert!(a.memory_history().is_none(), "disabling forgets");
    }

    #[test]
    fn an_oom_carries_the_free_bytes() {
        let mut a = allocator(4 << 20);
        a.record_memory_history(true, History::UNBOUNDED);
        let _x: BlockAddr = a.malloc(1000, "x").expect("fits");
        assert!(
            a.malloc(3 << 20, "big").is_err(),
            "a 20 MiB segment cannot fit"
        );
        let h = a.memory_history().expect("recording");
        let oom = h.events().last().expect("events");
        assert_eq!(oom.event.kind, EventKind::Oom);
        assert_eq!(oom.event.label, "big");
        // 4 MiB card, the 2 MiB small segment still held.
        assert_eq!(oom.device_free, Some(2 << 20));
        assert!(
            h.events()
                .all(|e| (e.event.kind == EventKind::Oom) == e.device_free.is_some())
        );
    }
}
