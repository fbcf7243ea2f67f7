//! Looking inside the allocator: where a block lives, every block, the segments, and a
//! recount of the statistics from the blocks themselves.

use super::{Allocator, BlockAddr, BlockInfo, Placement, Pool, SegmentStore};

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

    /// Sizes of the segments held, in address order; an expandable segment counts as one
    /// segment per contiguous mapped range, as PyTorch's snapshot reports it.
    pub fn segment_sizes(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut run: Option<(u64, u64, u64)> = None; // segment, end address, bytes
        for (&addr, b) in &self.blocks {
            let seg = &self.segments[&b.segment];
            if seg.page.is_none() {
                if addr == seg.addr {
                    out.extend(run.take().map(|r| r.2));
                    out.push(seg.size);
                }
                continue;
            }
            match (&mut run, b.mapped) {
                (Some((s, end, bytes)), true) if *s == b.segment && *end == addr => {
                    *end += b.size;
                    *bytes += b.size;
                }
                (_, true) => {
                    out.extend(run.take().map(|r| r.2));
                    run = Some((b.segment, addr + b.size, b.size));
                }
                (_, false) => out.extend(run.take().map(|r| r.2)),
            }
        }
        out.extend(run.map(|r| r.2));
        out
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
        let mut out: Vec<SegmentInfo> = self
            .segments
            .values()
            .map(|s| SegmentInfo {
                addr: s.addr,
                size: s.size,
                pool: s.pool,
                expandable: false,
                blocks: self
                    .blocks
                    .range(s.addr..s.addr + s.size)
                    .map(|(&addr, b)| BlockInfo {
                        addr,
                        segment: b.segment,
                        size: b.size,
                        requested: b.requested,
                        allocated: b.allocated,
                        label: b.label.clone(),
                    })
                    .collect(),
            })
            .collect();
        out.sort_by_key(|s| s.addr);
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

/// Totals recomputed from the block table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recount {
    pub allocated: u64,
    pub reserved: u64,
    pub requested: u64,
    pub allocations: u64,
    pub segments: u64,
}
