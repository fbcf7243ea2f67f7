//! The device's memory history and snapshots, with PyTorch's names:
//! `torch.cuda.memory._record_memory_history`, `_snapshot` and `_dump_snapshot`.

use super::{Device, Inner};
use crate::alloc::{AllocError, BlockAddr};
use crate::snapshot::{Snapshot, SnapshotError, build};
use std::path::Path;

impl Inner {
    /// The snapshot now, from the allocator's segments and history.
    fn snapshot(&self) -> Snapshot {
        let history = self
            .alloc
            .memory_history()
            .into_iter()
            .flat_map(|h| h.events());
        build::snapshot(&self.alloc.segments(), history, self.alloc.config())
    }

    /// Keeps a snapshot of the first out-of-memory while the history is recorded, with
    /// everything then alive: what PyTorch's out-of-memory observer sees when it dumps one.
    pub(super) fn note_oom(&mut self, result: &Result<BlockAddr, AllocError>) {
        if matches!(result, Err(AllocError::OutOfMemory(_)))
            && self.oom_snapshot.is_none()
            && self.alloc.memory_history().is_some()
        {
            self.oom_snapshot = Some(self.snapshot());
        }
    }
}

impl Device {
    /// `torch.cuda.memory._record_memory_history(max_entries=…)` when `enabled`: from now on
    /// every allocator event is kept (the newest `max_entries`; `History::UNBOUNDED` keeps
    /// all, PyTorch's default), whatever `start_trace`/`take_trace` do.
    /// `_record_memory_history(enabled=None)` when not: stop, and forget the history.
    pub fn record_memory_history(&self, enabled: bool, max_entries: usize) {
        self.inner
            .borrow_mut()
            .alloc
            .record_memory_history(enabled, max_entries);
    }

    /// Whether the history is being recorded.
    pub fn is_history_enabled(&self) -> bool {
        self.inner.borrow().alloc.memory_history().is_some()
    }

    /// `torch.cuda.memory._snapshot()`: the segments and their blocks now, and the recorded
    /// history (an empty trace if none is recorded), with the allocator's settings.
    pub fn memory_snapshot(&self) -> Snapshot {
        self.inner.borrow().snapshot()
    }

    /// The snapshot taken at the first out-of-memory while the history was recorded (the
    /// moment a PyTorch out-of-memory observer dumps one), if there was one.
    pub fn oom_snapshot(&self) -> Option<Snapshot> {
        self.inner.borrow().oom_snapshot.clone()
    }

    /// `torch.cuda.memory._dump_snapshot(path)`: [`Device::memory_snapshot`] as a pickle.
    pub fn dump_snapshot(&self, path: &Path) -> Result<(), SnapshotError> {
        self.memory_snapshot().write(path)
    }
}
