//! A caching allocator that follows PyTorch's CUDA caching allocator rule by rule.
//!
//! Tensors get *blocks*; blocks are carved out of *segments*; segments are what the
//! device (the backing) actually allocates. Freed blocks stay in the cache for reuse, so
//! `reserved` (segments) is usually larger than `allocated` (blocks in use).
//!
//! The rules, with PyTorch's names:
//! - every request is rounded up to a multiple of 512 B (`kMinBlockSize`);
//! - requests up to 1 MiB (`kSmallSize`) use the small pool, carved from 2 MiB segments
//!   (`kSmallBuffer`); larger ones use the large pool, where requests under 10 MiB
//!   (`kMinLargeAlloc`) get a 20 MiB segment (`kLargeBuffer`) and larger ones a segment
//!   rounded up to 2 MiB (`kRoundLarge`);
//! - a request takes the smallest free block of its pool that is large enough (best fit);
//! - the block is split if what is left is useful (≥ 512 B in the small pool, > 1 MiB in
//!   the large pool) and the request is below `max_split_size`; neighbours merge on free;
//! - with `max_split_size`, requests below it never take blocks at or above it, and
//!   requests at or above it take a cached block only if less than 20 MiB would be wasted;
//! - with `garbage_collection_threshold`, when reserved memory passes that fraction of the
//!   capacity, unused cached segments are given back, oldest first;
//! - when the device refuses a segment, the allocator gives back cached segments and tries
//!   again before reporting out-of-memory.

mod config;
mod expandable;
mod history;
mod inspect;
mod limits;
mod oom;
mod release;
mod rules;
mod stats;
mod store;
mod trace;

pub use config::AllocatorConfig;
pub use history::{History, HistoryEvent};
pub use inspect::{Recount, SegmentInfo};
pub use limits::{
    ConfigError, MAX_SPLIT_AT_LEAST_FROM, MaxSplitMinimum, check_gc_threshold,
    check_max_split_size, check_memory_fraction,
};
pub use oom::{OomCause, OomMessage, OutOfMemory};
use rules::FIRST_ADDRESS;
pub use rules::{
    LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, Pool, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
    page_size, pool_for, round_size, segment_size, should_split,
};
pub use stats::{MemoryStats, PoolStat, Stat};
pub use store::{SegmentStore, StoreError};
pub use trace::{EventKind, Trace, TraceEvent};

use crate::role::Role;
use std::collections::{BTreeMap, BTreeSet};

/// What a block holds, as its events record it: a label for people and a role, if known.
type Tag<'a> = (&'a str, Option<Role>);

/// Why an allocation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllocError {
    #[error(transparent)]
    OutOfMemory(Box<OutOfMemory>),
    #[error("a request of {0} bytes is larger than any device can hold")]
    TooLarge(u64),
    #[error("the device failed: {0}")]
    Device(String),
}

/// Why a segment could not be had.
enum SegmentFailure {
    Capacity,
    Store(StoreError),
}

/// A live or cached block. Blocks tile their segment exactly, so a block's neighbours are
/// the blocks that end where it starts and start where it ends.
#[derive(Debug, Clone)]
struct Block {
    segment: u64,
    size: u64,
    requested: u64,
    allocated: bool,
    label: String,
    /// The role of the tensor in the block; `None` while free.
    role: Option<Role>,
    /// `free_block_calls` of the pool when this block became free (for garbage collection).
    freed_at: u64,
    /// Whether device memory backs the block's addresses. Always true outside expandable
    /// segments; an unmapped block is address space only, in no free set.
    mapped: bool,
}

#[derive(Debug, Clone)]
struct Segment {
    addr: u64,
    /// Bytes of address space (for an expandable segment, far more than is mapped).
    size: u64,
    pool: Option<Pool>,
    /// The page size of an expandable segment; `None` for an ordinary one.
    page: Option<u64>,
}

/// A handle to an allocated block: its address. Stable while the block is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockAddr(pub u64);

/// Where a block lives: its segment and byte offset inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub segment: u64,
    pub offset: u64,
    pub size: u64,
}

/// One row of [`Allocator::snapshot`]: a block and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockInfo {
    pub addr: u64,
    pub segment: u64,
    pub size: u64,
    pub requested: u64,
    pub allocated: bool,
    pub label: String,
    /// What the block holds, typed; `None` for a free block or one allocated without a role.
    #[serde(skip)]
    pub role: Option<Role>,
}

/// The caching allocator over a segment store `S`.
#[derive(Debug)]
pub struct Allocator<S> {
    store: S,
    config: AllocatorConfig,
    blocks: BTreeMap<u64, Block>,
    segments: BTreeMap<u64, Segment>,
    free_small: BTreeSet<(u64, u64)>,
    free_large: BTreeSet<(u64, u64)>,
    /// Addresses of unmapped blocks of expandable segments, per pool (`BlockPool::unmapped`).
    unmapped: [BTreeSet<u64>; 2],
    /// Calls to get a free block, per pool: the clock that ages cached blocks.
    free_block_calls: [u64; 2],
    next_segment: u64,
    next_addr: u64,
    stats: MemoryStats,
    trace: Option<Trace>,
    history: Option<History>,
    /// The request being served, for the events it causes (segments, an OOM).
    label: String,
    role: Option<Role>,
}

fn pool_index(p: Pool) -> usize {
    match p {
        Pool::Small => 0,
        Pool::Large => 1,
    }
}

impl<S: SegmentStore> Allocator<S> {
    pub fn new(store: S, config: AllocatorConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            store,
            config,
            blocks: BTreeMap::new(),
            segments: BTreeMap::new(),
            free_small: BTreeSet::new(),
            free_large: BTreeSet::new(),
            unmapped: [BTreeSet::new(), BTreeSet::new()],
            free_block_calls: [0; 2],
            next_segment: 0,
            next_addr: FIRST_ADDRESS,
            stats: MemoryStats::default(),
            trace: None,
            history: None,
            label: String::new(),
            role: None,
        })
    }

    pub fn config(&self) -> &AllocatorConfig {
        &self.config
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    pub fn stats(&self) -> &MemoryStats {
        &self.stats
    }

    /// `memory_allocated()`: bytes in blocks that are in use.
    #[allow(clippy::misnamed_getters)] // current, not the running total
    pub fn allocated(&self) -> u64 {
        self.stats.allocated_bytes.all.current
    }

    /// `memory_reserved()`: bytes in segments held from the device.
    pub fn reserved(&self) -> u64 {
        self.stats.reserved_bytes.all.current
    }

    pub fn reset_peaks(&mut self) {
        self.stats.reset_peaks();
    }

    /// Starts recording events (dropping any earlier recording).
    pub fn start_trace(&mut self) {
        self.trace = Some(Trace::default());
    }

    /// Stops recording and returns what was recorded.
    pub fn take_trace(&mut self) -> Trace {
        self.trace.take().unwrap_or_default()
    }

    /// Records an event of a block or segment holding `tag` (a label and a role).
    fn record(&mut self, kind: EventKind, addr: u64, size: u64, requested: u64, tag: Tag<'_>) {
        self.record_history(kind, addr, size, requested, tag);
        let (allocated, reserved) = (self.allocated(), self.reserved());
        if let Some(t) = &mut self.trace {
            t.events.push(TraceEvent {
                kind,
                addr,
                size,
                requested,
                label: tag.0.to_string(),
                role: tag.1,
                allocated,
                reserved,
            });
        }
    }

    /// The request being served, as a tag for its events.
    fn request_tag(&self) -> (String, Option<Role>) {
        (self.label.clone(), self.role)
    }

    fn pool_set(&mut self, pool: Pool) -> &mut BTreeSet<(u64, u64)> {
        match pool {
            Pool::Small => &mut self.free_small,
            Pool::Large => &mut self.free_large,
        }
    }

    fn segment_pool(&self, segment: u64) -> Option<Pool> {
        self.segments.get(&segment).and_then(|s| s.pool)
    }

    fn is_oversize(&self, size: u64) -> bool {
        self.config.max_split_size.is_some_and(|m| size >= m)
    }

    /// Allocates `requested` bytes for `label`, with no role: the allocator on its own, as
    /// PyTorch's, does not know what its blocks are for ([`Allocator::malloc_as`] does).
    pub fn malloc(&mut self, requested: u64, label: &str) -> Result<BlockAddr, AllocError> {
        self.malloc_tagged(requested, (label, None))
    }

    /// Allocates `requested` bytes for a tensor of `role` labelled `label`.
    pub fn malloc_as(
        &mut self,
        requested: u64,
        role: Role,
        label: &str,
    ) -> Result<BlockAddr, AllocError> {
        self.malloc_tagged(requested, (label, Some(role)))
    }

    fn malloc_tagged(&mut self, requested: u64, tag: Tag<'_>) -> Result<BlockAddr, AllocError> {
        let size = round_size(requested).ok_or(AllocError::TooLarge(requested))?;
        let seg_size = if self.config.caching {
            segment_size(size).ok_or(AllocError::TooLarge(requested))?
        } else {
            size
        };
        self.label = tag.0.to_string();
        self.role = tag.1;
        let addr = if self.config.caching {
            let pool = pool_for(size);
            match self.take_free_block(pool, size) {
                Some(addr) => addr,
                None => self.new_segment_with_retry(Some(pool), size, seg_size, requested)?,
            }
        } else {
            self.new_segment_with_retry(None, size, seg_size, requested)?
        };
        self.hand_out(addr, size, requested, tag);
        Ok(BlockAddr(addr))
    }

    /// Best fit from `pool` under the `max_split_size` rules (`get_free_block`).
    fn take_free_block(&mut self, pool: Pool, size: u64) -> Option<u64> {
        self.free_block_calls[pool_index(pool)] += 1;
        let (bsize, addr) = self.best_fit(pool, size)?;
        if let Some(max_split) = self.config.max_split_size {
            // Do not spend an oversize block on a small request, and do not use one that
            // would waste a whole large buffer or more.
            if size < max_split && bsize >= max_split {
                return None;
            }
            if size >= max_split && bsize >= size + LARGE_BUFFER {
                return None;
            }
        }
        self.pool_set(pool).remove(&(bsize, addr));
        Some(addr)
    }

    /// Gets a fresh segment, giving back cache and retrying as PyTorch does.
    fn new_segment_with_retry(
        &mut self,
        pool: Option<Pool>,
        size: u64,
        seg_size: u64,
        requested: u64,
    ) -> Result<u64, AllocError> {
        // PyTorch collects garbage only when a memory fraction is set.
        if self.config.gc_threshold.is_some() && self.config.memory_fraction.is_some() {
            self.garbage_collect();
        }
        let mut last = match self.alloc_block(pool, size, seg_size) {
            Ok(addr) => return Ok(addr),
            Err(e) => e,
        };
        if self.release_available_cached_blocks(pool, size) {
            match self.alloc_block(pool, size, seg_size) {
                Ok(addr) => return Ok(addr),
                Err(e) => last = e,
            }
        }
        if !matches!(last, SegmentFailure::Store(StoreError::Fatal(_))) {
            // Give back everything cached and ask once more (PyTorch counts this as a
            // "cudaMalloc retry" whether or not anything was cached).
            self.empty_cache();
            self.stats.num_alloc_retries += 1;
            match self.alloc_block(pool, size, seg_size) {
                Ok(addr) => return Ok(addr),
                Err(e) => last = e,
            }
        }
        let cause = match last {
            SegmentFailure::Store(StoreError::Fatal(why)) => return Err(AllocError::Device(why)),
            SegmentFailure::Capacity => OomCause::Capacity,
            SegmentFailure::Store(StoreError::OutOfMemory(why)) => OomCause::Backing(why),
        };
        self.stats.num_ooms += 1;
        let (label, role) = self.request_tag();
        self.record(EventKind::Oom, 0, seg_size, requested, (&label, role));
        Err(AllocError::OutOfMemory(Box::new(OutOfMemory {
            label,
            requested,
            tried: seg_size,
            capacity: self.config.capacity.or_else(|| self.store.total_memory()),
            allocated: self.allocated(),
            reserved: self.reserved(),
            free: self.free_on_device(),
            allowed: self.config.allowed(),
            context_memory: self.config.context_memory,
            device: String::new(),
            cause,
            message: OomMessage::default(),
        })))
    }

    /// Free bytes on the device: capacity − memory outside the allocator − reserved on an
    /// emulated card (what `cudaMemGetInfo` reports), else what the store reports.
    pub fn free_on_device(&self) -> Option<u64> {
        match self.config.capacity {
            Some(c) => Some(
                c.saturating_sub(self.config.context_memory)
                    .saturating_sub(self.reserved()),
            ),
            None => self.store.free_memory(),
        }
    }

    /// Whether the emulated card has `bytes` more to give (the driver's refusal).
    fn device_has(&self, bytes: u64) -> bool {
        self.config.capacity.is_none_or(|cap| {
            self.reserved()
                .saturating_add(self.config.context_memory)
                .saturating_add(bytes)
                <= cap
        })
    }

    /// One attempt to get memory from the device (`alloc_block`): refused past the
    /// memory fraction, else pages mapped into an expandable segment, else a new segment.
    fn alloc_block(
        &mut self,
        pool: Option<Pool>,
        size: u64,
        seg_size: u64,
    ) -> Result<u64, SegmentFailure> {
        if let Some(allowed) = self.config.allowed()
            && self.reserved().saturating_add(seg_size) > allowed
        {
            return Err(SegmentFailure::Capacity);
        }
        match pool {
            Some(pool) if self.config.expandable_segments => {
                self.try_allocate_expandable_block(pool, size)
            }
            _ => self.new_segment(pool, seg_size),
        }
    }

    /// Asks the store for a segment (`cudaMalloc`); the whole segment becomes one free
    /// block, not yet in any pool.
    fn new_segment(&mut self, pool: Option<Pool>, seg_size: u64) -> Result<u64, SegmentFailure> {
        if !self.device_has(seg_size) {
            return Err(SegmentFailure::Capacity);
        }
        let id = self.next_segment;
        self.store
            .create_segment(id, seg_size)
            .map_err(SegmentFailure::Store)?;
        self.next_segment += 1;
        let addr = self.next_addr;
        // Leave a gap so blocks of different segments are never address neighbours.
        self.next_addr = addr + seg_size.next_multiple_of(ROUND_LARGE) + ROUND_LARGE;
        self.segments.insert(
            id,
            Segment {
                addr,
                size: seg_size,
                pool,
                page: None,
            },
        );
        let (label, role) = self.request_tag();
        self.blocks.insert(
            addr,
            Block {
                segment: id,
                size: seg_size,
                requested: 0,
                allocated: false,
                label: label.clone(),
                role: None,
                freed_at: 0,
                mapped: true,
            },
        );
        self.stats.reserved_bytes.increase(pool, seg_size);
        self.stats.segment.increase(pool, 1);
        if self.is_oversize(seg_size) {
            self.stats.oversize_segments.increase(1);
        }
        self.stats.num_device_alloc += 1;
        self.record(EventKind::SegmentAlloc, addr, seg_size, 0, (&label, role));
        Ok(addr)
    }

    /// Marks the free block at `addr` allocated for `size`, splitting off the rest.
    fn hand_out(&mut self, addr: u64, size: u64, requested: u64, tag: Tag<'_>) {
        let segment = self.blocks[&addr].segment;
        let pool = self.segment_pool(segment);
        let block_size = self.blocks[&addr].size;
        // An inactive block of a split segment (PyTorch's `already_split`). Expandable
        // segments are left out of the inactive-split statistics, as in PyTorch.
        let expandable = self.segments[&segment].page.is_some();
        let already_split = block_size != self.segments[&segment].size;
        let split = should_split(
            size,
            block_size,
            self.config.max_split_size,
            self.config.expandable_segments,
        );
        if pool.is_some() && split {
            let rest = Block {
                segment,
                size: block_size - size,
                requested: 0,
                allocated: false,
                label: String::new(),
                role: None,
                freed_at: 0,
                mapped: true,
            };
            self.insert_free(addr + size, rest);
            self.blocks.get_mut(&addr).expect("block exists").size = size;
            if already_split && !expandable {
                // An inactive split block shrinks by what is handed out.
                self.stats.inactive_split_bytes.decrease(pool, size);
            } else if !expandable {
                // A new inactive split block: the rest of a segment that was whole.
                self.stats.inactive_split.increase(pool, 1);
                self.stats
                    .inactive_split_bytes
                    .increase(pool, block_size - size);
            }
        } else if already_split && !expandable {
            // An inactive split block becomes active.
            self.stats.inactive_split.decrease(pool, 1);
            self.stats.inactive_split_bytes.decrease(pool, block_size);
        }
        let block = self.blocks.get_mut(&addr).expect("block exists");
        block.allocated = true;
        block.requested = requested;
        block.label = tag.0.to_string();
        block.role = tag.1;
        let bsize = block.size;
        self.stats.allocation.increase(pool, 1);
        self.stats.allocated_bytes.increase(pool, bsize);
        self.stats.active.increase(pool, 1);
        self.stats.active_bytes.increase(pool, bsize);
        self.stats.requested_bytes.increase(pool, requested);
        if self.is_oversize(bsize) {
            self.stats.oversize_allocations.increase(1);
        }
        self.record(EventKind::Alloc, addr, bsize, requested, tag);
    }

    /// Puts a free block in the table and its pool (the inactive-split statistics are the
    /// caller's: PyTorch changes them once per call, by the net amount).
    fn insert_free(&mut self, addr: u64, mut block: Block) {
        let pool = self
            .segment_pool(block.segment)
            .expect("caching segments have a pool");
        block.freed_at = self.free_block_calls[pool_index(pool)];
        let size = block.size;
        self.blocks.insert(addr, block);
        self.pool_set(pool).insert((size, addr));
    }

    /// Changes a statistic by a signed amount, as one increase or one decrease.
    fn change(stat: &mut PoolStat, pool: Option<Pool>, by: i128) {
        match by.cmp(&0) {
            std::cmp::Ordering::Greater => stat.increase(pool, by as u64),
            std::cmp::Ordering::Less => stat.decrease(pool, by.unsigned_abs() as u64),
            std::cmp::Ordering::Equal => {}
        }
    }

    /// Gives a block back. Freeing a block that is not allocated is a bug in the caller
    /// and is reported as an error rather than corrupting the table.
    pub fn free(&mut self, handle: BlockAddr) -> Result<(), AllocError> {
        let addr = handle.0;
        let Some(block) = self.blocks.get_mut(&addr).filter(|b| b.allocated) else {
            return Err(AllocError::Device(format!(
                "free of an address that is not allocated: {addr:#x}"
            )));
        };
        block.allocated = false;
        let (segment, size, requested) = (block.segment, block.size, block.requested);
        let (label, role) = (block.label.clone(), block.role);
        let pool = self.segment_pool(segment);
        self.stats.allocation.decrease(pool, 1);
        self.stats.allocated_bytes.decrease(pool, size);
        self.stats.active.decrease(pool, 1);
        self.stats.active_bytes.decrease(pool, size);
        self.stats.requested_bytes.decrease(pool, requested);
        if self.is_oversize(size) {
            self.stats.oversize_allocations.decrease(1);
        }
        self.record(EventKind::Free, addr, size, requested, (&label, role));
        if pool.is_none() {
            // Caching off: the block is the whole segment; give it back at once.
            self.release_segment_of(addr);
            return Ok(());
        }
        let mut block = self.blocks.remove(&addr).expect("block exists");
        block.label.clear();
        block.role = None;
        let (merged, subsumed) = self.merge_neighbours(addr, block);
        // PyTorch's `free_block`: the inactive-split statistics change once, by the net
        // amount — minus the neighbours merged in, plus the result if its segment is still
        // split.
        let seg = &self.segments[&merged.1.segment];
        let (still_split, expandable) = (merged.1.size != seg.size, seg.page.is_some());
        let merged_size = merged.1.size;
        self.insert_free(merged.0, merged.1);
        if expandable {
            return Ok(());
        }
        let blocks = -(subsumed.len() as i128) + i128::from(still_split);
        let bytes = -subsumed.iter().map(|&b| i128::from(b)).sum::<i128>()
            + if still_split {
                i128::from(merged_size)
            } else {
                0
            };
        Self::change(&mut self.stats.inactive_split, pool, blocks);
        Self::change(&mut self.stats.inactive_split_bytes, pool, bytes);
        Ok(())
    }

    /// Merges a newly freed block with free neighbours in its segment (`try_merge_blocks`);
    /// returns the merged block and the sizes of the neighbours it took in.
    fn merge_neighbours(&mut self, mut addr: u64, mut block: Block) -> ((u64, Block), Vec<u64>) {
        let mut subsumed = Vec::new();
        let pool = self
            .segment_pool(block.segment)
            .expect("caching segments have a pool");
        let next_addr = addr + block.size;
        if let Some(next) = self.blocks.get(&next_addr)
            && !next.allocated
            && next.mapped
            && next.segment == block.segment
        {
            let next = self.blocks.remove(&next_addr).expect("neighbour exists");
            self.pool_set(pool).remove(&(next.size, next_addr));
            subsumed.push(next.size);
            block.size += next.size;
        }
        if let Some((&prev_addr, prev)) = self.blocks.range(..addr).next_back()
            && !prev.allocated
            && prev.mapped
            && prev.segment == block.segment
            && prev_addr + prev.size == addr
        {
            let prev = self.blocks.remove(&prev_addr).expect("neighbour exists");
            self.pool_set(pool).remove(&(prev.size, prev_addr));
            subsumed.push(prev.size);
            block.size += prev.size;
            addr = prev_addr;
        }
        ((addr, block), subsumed)
    }
}

#[cfg(test)]
mod tests;
