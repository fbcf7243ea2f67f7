//! `expandable_segments:True`: one segment per pool that grows by mapping pages.
//!
//! An expandable segment is a range of address space (1⅛ × the card, as PyTorch reserves)
//! of which only some pages are backed by memory. Blocks still tile the whole range; the
//! unbacked ones are *unmapped* and sit in no free set. When no cached block fits, the
//! allocator maps just enough pages (2 MiB in the small pool, 20 MiB in the large one) at
//! the lowest address where free and unmapped blocks together are large enough, so a
//! request larger than any cached block extends the segment instead of cutting a new one.
//! `empty_cache()` (and the retry before an out-of-memory) unmaps every whole free page.
//!
//! Statistics as PyTorch keeps them: mapping adds to `reserved_bytes` and counts one
//! device allocation; unmapping takes it off and counts one device free; the `segment`
//! count and the inactive-split statistics leave expandable segments out.

use super::{
    Allocator, Block, EventKind, Pool, Segment, SegmentFailure, SegmentStore, page_size, pool_index,
};
use crate::alloc::rules::ROUND_LARGE;

/// Address space of an expandable segment when the card's size is unknown (`native`).
const UNKNOWN_TOTAL: u64 = 1 << 40;

impl Block {
    /// Address space of segment `segment` that no memory backs yet.
    fn unmapped(segment: u64, size: u64) -> Block {
        Block {
            segment,
            size,
            requested: 0,
            allocated: false,
            label: String::new(),
            role: None,
            freed_at: 0,
            mapped: false,
        }
    }
}

impl<S: SegmentStore> Allocator<S> {
    /// The best-fit free block of `pool` for `size` (`get_free_block`'s search). A block
    /// followed by unmapped pages counts as large as it could grow, so among blocks of
    /// expandable segments the one that fits the request most tightly once grown is
    /// taken, as PyTorch does.
    pub(super) fn best_fit(&self, pool: Pool, size: u64) -> Option<(u64, u64)> {
        let set = match pool {
            Pool::Small => &self.free_small,
            Pool::Large => &self.free_large,
        };
        let mut it = set.range((size, 0)..);
        let mut best = *it.next()?;
        if !self.config.expandable_segments || !self.is_expandable_block(best.1) {
            return Some(best);
        }
        for &next in it {
            if !self.is_expandable_block(best.1)
                || self.expandable_size(next.1) >= self.expandable_size(best.1)
            {
                break;
            }
            best = next;
        }
        Some(best)
    }

    fn is_expandable_block(&self, addr: u64) -> bool {
        self.segments[&self.blocks[&addr].segment].page.is_some()
    }

    /// A block's size plus the unmapped block right after it.
    fn expandable_size(&self, addr: u64) -> u64 {
        let size = self.blocks[&addr].size;
        size + self
            .next_block(addr)
            .map_or(0, |(_, b)| if b.mapped { 0 } else { b.size })
    }

    /// The block that starts where `addr`'s ends, in the same segment.
    fn next_block(&self, addr: u64) -> Option<(u64, &Block)> {
        let b = &self.blocks[&addr];
        let next = addr + b.size;
        self.blocks
            .get(&next)
            .filter(|n| n.segment == b.segment)
            .map(|n| (next, n))
    }

    /// The block that ends where `addr` starts, in the same segment.
    fn prev_block(&self, addr: u64) -> Option<(u64, &Block)> {
        let segment = self.blocks[&addr].segment;
        self.blocks
            .range(..addr)
            .next_back()
            .filter(|(a, p)| p.segment == segment && *a + p.size == addr)
            .map(|(a, p)| (*a, p))
    }

    /// Maps pages so that a free block of at least `size` exists, and takes it out of the
    /// free set (`try_allocate_expandable_block`).
    pub(super) fn try_allocate_expandable_block(
        &mut self,
        pool: Pool,
        size: u64,
    ) -> Result<u64, SegmentFailure> {
        let mut candidate = self.find_expandable_block(pool, size);
        if !self.blocks[&candidate].mapped {
            let len = self.blocks[&candidate].size.min(size);
            candidate = self.map_block(candidate, len)?;
        }
        while self.blocks[&candidate].size < size {
            let remaining = size - self.blocks[&candidate].size;
            let (next, n) = self
                .next_block(candidate)
                .expect("find_expandable_block leaves room after a free block");
            let len = remaining.min(n.size);
            candidate = self.map_block(next, len)?;
        }
        let b = &self.blocks[&candidate];
        let key = (b.size, candidate);
        self.pool_set(pool).remove(&key);
        Ok(candidate)
    }

    /// The lowest address where free and unmapped blocks together hold `size`, starting
    /// at an unmapped block or the free block just before one; a new expandable segment
    /// when there is none (`find_expandable_block`).
    fn find_expandable_block(&mut self, pool: Pool, size: u64) -> u64 {
        let free = |b: &Block| !b.allocated;
        for &u in &self.unmapped[pool_index(pool)] {
            let start = match self.prev_block(u) {
                Some((p, b)) if free(b) => p,
                _ => u,
            };
            let (mut at, mut bytes) = (Some(start), 0);
            while bytes < size {
                let Some(a) = at.filter(|a| free(&self.blocks[a])) else {
                    break;
                };
                bytes += self.blocks[&a].size;
                at = self.next_block(a).map(|(n, _)| n);
            }
            if bytes >= size {
                return start;
            }
        }
        self.new_expandable_segment(pool)
    }

    /// Reserves address space for a new expandable segment: one unmapped block.
    fn new_expandable_segment(&mut self, pool: Pool) -> u64 {
        let page = page_size(pool);
        let total = self
            .config
            .capacity
            .or_else(|| self.store.total_memory())
            .unwrap_or(UNKNOWN_TOTAL);
        let size = (total + total / 8).div_ceil(page).max(1) * page;
        let id = self.next_segment;
        self.next_segment += 1;
        let addr = self.next_addr;
        self.next_addr = addr + size.next_multiple_of(ROUND_LARGE) + ROUND_LARGE;
        let segment = Segment {
            addr,
            size,
            pool: Some(pool),
            page: Some(page),
        };
        self.segments.insert(id, segment);
        self.blocks.insert(addr, Block::unmapped(id, size));
        self.unmapped[pool_index(pool)].insert(addr);
        addr
    }

    /// Maps the pages under the first `len` bytes of the unmapped block at `addr`; the
    /// mapped part joins its free neighbours. Returns the free block it became part of
    /// (`map_block`).
    fn map_block(&mut self, addr: u64, len: u64) -> Result<u64, SegmentFailure> {
        let (seg_id, size) = (self.blocks[&addr].segment, self.blocks[&addr].size);
        let seg = &self.segments[&seg_id];
        let (page, pool, base) = (seg.page.expect("expandable"), seg.pool, seg.addr);
        let pool = pool.expect("expandable segments have a pool");
        let bytes = len.div_ceil(page) * page;
        if !self.device_has(bytes) {
            return Err(SegmentFailure::Capacity);
        }
        self.store
            .map_pages(seg_id, addr - base, bytes, page)
            .map_err(SegmentFailure::Store)?;
        self.unmapped[pool_index(pool)].remove(&addr);
        if bytes < size {
            let rest = Block::unmapped(seg_id, size - bytes);
            self.blocks.insert(addr + bytes, rest);
            self.unmapped[pool_index(pool)].insert(addr + bytes);
        }
        let mut block = self.blocks.remove(&addr).expect("block exists");
        block.size = bytes;
        block.mapped = true;
        let ((merged, block), _) = self.merge_neighbours(addr, block);
        self.insert_free(merged, block);
        self.stats.reserved_bytes.increase(Some(pool), bytes);
        self.stats.num_device_alloc += 1;
        let (label, role) = self.request_tag();
        self.record(EventKind::SegmentMap, addr, bytes, 0, (&label, role));
        Ok(merged)
    }

    /// Unmaps the whole pages inside the free block at `addr` (`unmap_block`); what is
    /// left of the block on either side stays free and mapped.
    fn unmap_block(&mut self, addr: u64) {
        let b = &self.blocks[&addr];
        let seg = &self.segments[&b.segment];
        let (seg_id, size, base) = (b.segment, b.size, seg.addr);
        let page = seg.page.expect("expandable");
        let pool = seg.pool.expect("expandable segments have a pool");
        let begin = base + (addr - base).div_ceil(page) * page;
        let end = base + (addr + size - base) / page * page;
        if begin >= end {
            return;
        }
        self.pool_set(pool).remove(&(size, addr));
        let mut block = self.blocks.remove(&addr).expect("block exists");
        let (label, role) = (std::mem::take(&mut block.label), block.role.take());
        for (at, len) in [(addr, begin - addr), (end, addr + size - end)] {
            if len > 0 {
                let part = Block {
                    size: len,
                    ..block.clone()
                };
                self.insert_free(at, part);
            }
        }
        self.store.unmap_pages(seg_id, begin - base, end - begin);
        self.stats.reserved_bytes.decrease(Some(pool), end - begin);
        self.stats.num_device_free += 1;
        self.record(
            EventKind::SegmentUnmap,
            begin,
            end - begin,
            0,
            (&label, role),
        );
        // The unmapped pages join unmapped neighbours.
        let mut at = begin;
        let mut len = end - begin;
        if let Some((n, nb)) = self.blocks.get(&end).map(|nb| (end, nb.clone()))
            && nb.segment == seg_id
            && !nb.mapped
        {
            self.blocks.remove(&n);
            self.unmapped[pool_index(pool)].remove(&n);
            len += nb.size;
        }
        if let Some((p, pb)) = self.blocks.range(..begin).next_back().map(|(a, b)| (*a, b))
            && pb.segment == seg_id
            && !pb.mapped
            && p + pb.size == begin
        {
            len += pb.size;
            self.blocks.remove(&p);
            self.unmapped[pool_index(pool)].remove(&p);
            at = p;
        }
        let unmapped = Block::unmapped(seg_id, len);
        self.blocks.insert(at, unmapped);
        self.unmapped[pool_index(pool)].insert(at);
        if len == self.segments[&seg_id].size {
            self.release_expandable_segment(at);
        }
    }

    /// Forgets an expandable segment that has no page mapped any more.
    fn release_expandable_segment(&mut self, addr: u64) {
        let block = self.blocks.remove(&addr).expect("block exists");
        let seg = self
            .segments
            .remove(&block.segment)
            .expect("segment exists");
        if let Some(pool) = seg.pool {
            self.unmapped[pool_index(pool)].remove(&addr);
        }
        self.store.release_segment(block.segment);
    }

    /// Unmaps every whole free page of `pool`'s expandable segments (`release_blocks`'
    /// part for expandable segments).
    pub(super) fn unmap_free_pages(&mut self, pool: Pool) {
        let set = match pool {
            Pool::Small => &self.free_small,
            Pool::Large => &self.free_large,
        };
        let free: Vec<u64> = set
            .iter()
            .map(|&(_, a)| a)
            .filter(|a| self.is_expandable_block(*a))
            .collect();
        for addr in free {
            self.unmap_block(addr);
        }
    }

    /// Bytes mapped in expandable segments (their share of `reserved`).
    pub(super) fn mapped_expandable_bytes(&self) -> u64 {
        self.blocks
            .values()
            .filter(|b| b.mapped && self.segments[&b.segment].page.is_some())
            .map(|b| b.size)
            .sum()
    }
}
