//! Looking inside the allocator: where a block lives, every block, the segments, and a
//! recount of the statistics from the blocks themselves.

use super::{Allocator, Block, BlockAddr, BlockInfo, Placement, Pool, SegmentStore};

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

    /// Every block backed by memory, in address order (`torch.cuda.memory_snapshot`).
    pub fn snapshot(&self) -> Vec<BlockInfo> {
        self.blocks
            .iter()
            .filter(|(_, b)| b.mapped)
            .map(|(&addr, b)| block_info(addr, b))
            .collect()
    }

    /// Sizes of the segments held, in address order; an expandable segment counts as one
    /// segment per contiguous mapped range, as PyTorch's snapshot reports it.
    pub fn segment_sizes(&self) -> Vec<u64> {
        self.segments().iter().map(|s| s.size).collect()
    }

    /// The largest free block in the cache (what a request could get without the device).
    pub fn largest_free_block(&self) -> u64 {
        let small = self.free_small.last().map_or(0, |b| b.0);
        let large = self.free_large.last().map_or(0, |b| b.0);
        small.max(large)
    }

    /// Every segment with its blocks, in address order (what `torch.cuda.memory._snapshot()`
    /// lists under `segments`).
    pub fn segments(&self) -> Vec<SegmentInfo> {
        // Blocks in address order; a segment (or, for an expandable segment, a run of
        // mapped blocks) starts where the previous one's blocks stop touching.
        let mut out: Vec<SegmentInfo> = Vec::new();
        for (&addr, b) in self.blocks.iter().filter(|(_, b)| b.mapped) {
            let seg = &self.segments[&b.segment];
            let info = block_info(addr, b);
            match out.last_mut() {
                Some(last)
                    if last.blocks[0].segment == b.segment && last.addr + last.size == addr =>
                {
                    last.size += b.size;
                    last.blocks.push(info);
                }
                _ => out.push(SegmentInfo {
                    addr,
                    size: b.size,
                    pool: seg.pool,
                    expandable: seg.page.is_some(),
                    blocks: vec![info],
                }),
            }
        }
        out
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
        for s in self.segments.values().filter(|s| s.page.is_none()) {
            r.reserved += s.size;
            r.segments += 1;
        }
        r.reserved += self.mapped_expandable_bytes();
        r
    }
}

/// One segment as PyTorch's snapshot lists it (its `SegmentInfo`): where it lies, its pool,
/// and its blocks in address order, which tile it exactly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SegmentInfo {
    pub addr: u64,
    pub size: u64,
    /// `None` with caching off: one block, the whole segment, in no pool.
    pub pool: Option<Pool>,
    /// Part of an expandable segment (`expandable_segments:True`).
    pub expandable: bool,
    pub blocks: Vec<BlockInfo>,
}

/// A block as the snapshot lists it.
fn block_info(addr: u64, b: &Block) -> BlockInfo {
    BlockInfo {
        addr,
        segment: b.segment,
        size: b.size,
        requested: b.requested,
        allocated: b.allocated,
        label: b.label.clone(),
        role: b.role,
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
