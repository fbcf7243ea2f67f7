//! Counters in the shape of PyTorch's `torch.cuda.memory_stats()`.

use serde::{Deserialize, Serialize};

/// One statistic: its current value, its peak, and the running totals of increases and
/// decreases (PyTorch's `current`, `peak`, `allocated`, `freed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    pub current: u64,
    pub peak: u64,
    pub allocated: u64,
    pub freed: u64,
}

impl Stat {
    pub(crate) fn increase(&mut self, amount: u64) {
        self.current += amount;
        self.allocated += amount;
        self.peak = self.peak.max(self.current);
    }

    pub(crate) fn decrease(&mut self, amount: u64) {
        debug_assert!(self.current >= amount, "stat would go negative");
        self.current -= amount;
        self.freed += amount;
    }

    pub(crate) fn reset_peak(&mut self) {
        self.peak = self.current;
    }
}

/// A statistic split by pool, like PyTorch's `all` / `small_pool` / `large_pool` keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStat {
    pub all: Stat,
    pub small_pool: Stat,
    pub large_pool: Stat,
}

impl PoolStat {
    pub(crate) fn increase(&mut self, pool: Option<super::Pool>, amount: u64) {
        self.all.increase(amount);
        match pool {
            Some(super::Pool::Small) => self.small_pool.increase(amount),
            Some(super::Pool::Large) => self.large_pool.increase(amount),
            None => {}
        }
    }

    pub(crate) fn decrease(&mut self, pool: Option<super::Pool>, amount: u64) {
        self.all.decrease(amount);
        match pool {
            Some(super::Pool::Small) => self.small_pool.decrease(amount),
            Some(super::Pool::Large) => self.large_pool.decrease(amount),
            None => {}
        }
    }

    fn reset_peak(&mut self) {
        self.all.reset_peak();
        self.small_pool.reset_peak();
        self.large_pool.reset_peak();
    }
}

/// Everything the allocator counts. Byte figures count whole blocks (a block may be larger
/// than the request it serves), exactly as PyTorch's `allocated_bytes` does; the bytes that
/// were asked for are in `requested_bytes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryStats {
    /// Bytes in blocks handed out to tensors (`torch.cuda.memory_allocated`).
    pub allocated_bytes: PoolStat,
    /// Bytes in segments held from the device (`torch.cuda.memory_reserved`).
    pub reserved_bytes: PoolStat,
    /// Bytes in blocks in use. Equal to `allocated_bytes` here: this engine has no streams
    /// that keep a freed block busy.
    pub active_bytes: PoolStat,
    /// Bytes that callers asked for, before rounding.
    pub requested_bytes: PoolStat,
    /// Free bytes inside segments that are split, i.e. cannot be given back to the device.
    pub inactive_split_bytes: PoolStat,
    /// Number of live blocks.
    pub allocation: PoolStat,
    /// Number of live segments.
    pub segment: PoolStat,
    /// Number of blocks in use.
    pub active: PoolStat,
    /// Number of free blocks inside split segments.
    pub inactive_split: PoolStat,
    /// Blocks at or above `max_split_size`, which are never split.
    pub oversize_allocations: Stat,
    /// Segments at or above `max_split_size`.
    pub oversize_segments: Stat,
    /// Times the allocator freed its whole cache and asked the device again.
    pub num_alloc_retries: u64,
    /// Requests that failed with out-of-memory.
    pub num_ooms: u64,
    /// Segment allocations: calls to the device (`cudaMalloc` in PyTorch).
    pub num_device_alloc: u64,
    /// Segment releases: calls to the device (`cudaFree` in PyTorch).
    pub num_device_free: u64,
}

impl MemoryStats {
    /// Sets every peak to its current value (`torch.cuda.reset_peak_memory_stats`).
    pub fn reset_peaks(&mut self) {
        for s in [
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.requested_bytes,
            &mut self.inactive_split_bytes,
            &mut self.allocation,
            &mut self.segment,
            &mut self.active,
            &mut self.inactive_split,
        ] {
            s.reset_peak();
        }
        self.oversize_allocations.reset_peak();
        self.oversize_segments.reset_peak();
    }
}
