//! Looking inside the allocator: where a block lives, every block, the segments, and a
//! recount of the statistics from the blocks themselves.

use super::{Allocator, BlockAddr, BlockInfo, Placement, SegmentStore};

impl<S: SegmentStore> Allocator<S> {
    /// Where an allocated block lives.
    pub fn placement(&self, handle: BlockAddr) -> Option<Placement> {
        let b = self.blocks.get(&handle.0).filter(|b| b.allocated)?;
        let seg = &self.segments[&b.segment];
        Some(Placement {
            segment: b.segment,
            offset: handle.0 - seg.addr,
            size: b.size,
        })
    }

    /// Every block, in address order (`torch.cuda.memory_snapshot`).
    pub fn snapshot(&self) -> Vec<BlockInfo> {
        self.blocks
            .iter()
            .map(|(&addr, b)| BlockInfo {
                addr,
                segment: b.segment,
                size: b.size,
                requested: b.requested,
                allocated: b.allocated,
                label: b.label.clone(),
            })
            .collect()
    }

    /// Sizes of the segments held, in address order.
    pub fn segment_sizes(&self) -> Vec<u64> {
        let mut v: Vec<_> = self.segments.values().map(|s| (s.addr, s.size)).collect();
        v.sort_unstable();
        v.into_iter().map(|(_, s)| s).collect()
    }

    /// The largest free block in the cache (what a request could get without the device).
    pub fn largest_free_block(&self) -> u64 {
        let small = self.free_small.last().map_or(0, |b| b.0);
        let large = self.free_large.last().map_or(0, |b| b.0);
        small.max(large)
    }

    /// Recounts allocated, reserved, requested and the counts from the block table; the
    /// property tests compare this with the running statistics.
    pub fn recount(&self) -> Recount {
        let mut r = Recount::default();
        for b in self.blocks.values() {
            if b.allocated {
                r.allocated += b.size;
                r.requested += b.requested;
                r.allocations += 1;
            }
        }
        for s in self.segments.values() {
            r.reserved += s.size;
            r.segments += 1;
        }
        r
    }
}

/// Totals recomputed from the block table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recount {
    pub allocated: u64,
    pub reserved: u64,
    pub requested: u64,
    pub allocations: u64,
    pub segments: u64,
}
