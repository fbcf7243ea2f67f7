//! Giving cached segments back to the device: `empty_cache()`, the retry before an
//! out-of-memory, and garbage collection past the threshold.

use super::{Allocator, EventKind, Pool, SegmentStore, pool_index};
use std::collections::BTreeSet;

impl<S: SegmentStore> Allocator<S> {
    /// Gives a whole free segment back to the store (`release_block`).
    pub(super) fn release_segment_of(&mut self, addr: u64) {
        let block = self.blocks.remove(&addr).expect("block exists");
        let seg = self
            .segments
            .remove(&block.segment)
            .expect("segment exists");
        debug_assert_eq!(seg.size, block.size, "only whole segments are released");
        if let Some(pool) = seg.pool {
            self.pool_set(pool).remove(&(block.size, addr));
        }
        self.store.release_segment(block.segment);
        self.stats.reserved_bytes.decrease(seg.pool, seg.size);
        self.stats.segment.decrease(seg.pool, 1);
        if self.is_oversize(seg.size) {
            self.stats.oversize_segments.decrease(1);
        }
        self.stats.num_device_free += 1;
        self.record(
            EventKind::SegmentFree,
            addr,
            seg.size,
            0,
            (&block.label, block.role),
        );
    }

    /// Free blocks that span their whole (ordinary) segment, in `pool` (or both pools).
    pub(super) fn whole_free_segments(&self, pool: Option<Pool>) -> Vec<(u64, u64)> {
        let sets: Vec<&BTreeSet<(u64, u64)>> = match pool {
            Some(Pool::Small) => vec![&self.free_small],
            Some(Pool::Large) => vec![&self.free_large],
            None => vec![&self.free_large, &self.free_small],
        };
        sets.into_iter()
            .flat_map(|s| s.iter().copied())
            .filter(|&(size, addr)| {
                let seg = &self.segments[&self.blocks[&addr].segment];
                seg.page.is_none() && seg.size == size
            })
            .collect()
    }

    /// `empty_cache()`: gives every unused cached segment back to the device, and unmaps
    /// every whole free page of the expandable segments (`release_cached_blocks`).
    pub fn empty_cache(&mut self) {
        for pool in [Pool::Large, Pool::Small] {
            for (_, addr) in self.whole_free_segments(Some(pool)) {
                self.release_segment_of(addr);
            }
            self.unmap_free_pages(pool);
        }
    }

    /// With `max_split_size`, frees oversize cached segments to make room for a request
    /// (`release_available_cached_blocks`). Returns whether anything was freed.
    pub(super) fn release_available_cached_blocks(
        &mut self,
        pool: Option<Pool>,
        size: u64,
    ) -> bool {
        let (Some(max_split), Some(pool)) = (self.config.max_split_size, pool) else {
            return false;
        };
        let want = size.max(max_split);
        let candidates = self.whole_free_segments(Some(pool));
        if let Some(&(_, addr)) = candidates.iter().find(|(s, _)| *s >= want) {
            self.release_segment_of(addr);
            return true;
        }
        // No single block is large enough: free oversize blocks, largest first.
        let mut released = 0;
        for &(s, addr) in candidates.iter().rev() {
            if released >= want || s < max_split {
                break;
            }
            self.release_segment_of(addr);
            released += s;
        }
        released >= want
    }

    /// Gives back cached large segments, oldest first, until reserved is under the
    /// threshold × the memory the fraction allows (`garbage_collect_cached_blocks`).
    pub(super) fn garbage_collect(&mut self) {
        let (Some(threshold), Some(allowed)) = (self.config.gc_threshold, self.config.allowed())
        else {
            return;
        };
        let limit = (threshold * allowed as f64) as u64;
        if self.reserved() <= limit {
            return;
        }
        let target = self.reserved() - limit;
        let now = self.free_block_calls[pool_index(Pool::Large)];
        let mut candidates: Vec<(u64, u64, u64)> = self
            .whole_free_segments(Some(Pool::Large))
            .into_iter()
            .map(|(size, addr)| (now - self.blocks[&addr].freed_at, size, addr))
            .collect();
        let mut reclaimed = 0;
        while reclaimed < target && !candidates.is_empty() {
            let total_age: u64 = candidates.iter().map(|c| c.0).sum();
            let avg = total_age as f64 / candidates.len() as f64;
            let (old, young): (Vec<_>, Vec<_>) =
                candidates.into_iter().partition(|c| c.0 as f64 >= avg);
            for (_, size, addr) in old {
                reclaimed += size;
                self.release_segment_of(addr);
            }
            candidates = young;
        }
    }
}
