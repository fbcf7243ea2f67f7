//! The oracle: the engine's own allocator (default settings, no capacity) replaying a
//! script, and what the graders read off it. Also the scripts' shared vocabulary: sizes in
//! words and random scripts.

use super::{Block, FreeBlock, Step};
use gpumem::alloc::{Allocator, AllocatorConfig, BlockAddr, SMALL_SIZE, SegmentInfo};
use gpumem::device::Backing;
use rand::RngExt;

pub(super) const KIB: u64 = 1 << 10;
pub(super) const MIB: u64 = 1 << 20;

/// Bytes exactly, in the largest unit that divides them: `3 MiB`, `1 KiB`, `1000 B`.
pub fn exact(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// A script in words: `alloc 1000 B, alloc 3 MiB, free #0, empty_cache`.
pub fn describe(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| match s {
            Step::Alloc(b) => format!("alloc {}", exact(*b)),
            Step::Free(i) => format!("free #{i}"),
            Step::EmptyCache => "empty_cache".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The engine's allocator after a script, with the handle of every block still live.
pub(super) struct Replay {
    pub alloc: Allocator<Backing>,
    pub live: Vec<Option<BlockAddr>>,
}

impl Replay {
    /// A fresh allocator with default settings and no capacity.
    pub fn new() -> Replay {
        Replay {
            alloc: Allocator::new(Backing::Plan, AllocatorConfig::default())
                .expect("default settings are valid"),
            live: Vec::new(),
        }
    }

    /// Runs one step (its index is the next one); returns `(allocated, reserved)` after it.
    pub fn step(&mut self, step: Step) -> (u64, u64) {
        let handle = match step {
            Step::Alloc(b) => Some(self.alloc.malloc(b, "t").expect("no capacity, no limit")),
            Step::Free(j) => {
                let block = self.live[j].take().expect("scripts free each block once");
                self.alloc.free(block).expect("the block is allocated");
                None
            }
            Step::EmptyCache => {
                self.alloc.empty_cache();
                None
            }
        };
        self.live.push(handle);
        (self.alloc.allocated(), self.alloc.reserved())
    }

    /// Replays a whole script.
    pub fn of(steps: &[Step]) -> Replay {
        let mut r = Replay::new();
        for &s in steps {
            r.step(s);
        }
        r
    }

    /// Every free block of the cache, in address order, as best fit sees it (segments
    /// numbered by the engine, in the order they were reserved).
    pub fn free_blocks(&self) -> Vec<FreeBlock> {
        let mut out = Vec::new();
        for seg in self.alloc.segments() {
            let Some(pool) = seg.pool else { continue };
            for b in seg.blocks.iter().filter(|b| !b.allocated) {
                out.push(FreeBlock {
                    pool,
                    size: b.size,
                    segment: b.segment as usize,
                    offset: b.addr - seg.addr,
                });
            }
        }
        out
    }

    /// The segment holding the live block of step `i`, and that block's index in it.
    pub fn segment_of(&self, i: usize) -> Option<(SegmentInfo, usize)> {
        let addr = self.live.get(i).copied().flatten()?.0;
        let seg = self
            .alloc
            .segments()
            .into_iter()
            .find(|s| s.addr <= addr && addr < s.addr + s.size)?;
        let index = seg.blocks.iter().position(|b| b.addr == addr)?;
        Some((seg, index))
    }
}

/// A segment's blocks as the learner sees them.
pub(super) fn blocks_of(seg: &SegmentInfo) -> Vec<Block> {
    seg.blocks
        .iter()
        .map(|b| Block {
            size: b.size,
            allocated: b.allocated,
        })
        .collect()
}

/// The engine's allocator running `steps`: `(allocated, reserved)` after each.
pub fn engine_memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
    let mut r = Replay::new();
    steps.iter().map(|&s| r.step(s)).collect()
}

/// A request size: tiny, small pool, large pool under 10 MiB, or a larger one.
pub(super) fn random_request(rng: &mut impl rand::Rng) -> u64 {
    match rng.random_range(0..4) {
        0 => rng.random_range(1..=4096),
        1 => rng.random_range(4096..=SMALL_SIZE),
        2 => rng.random_range(SMALL_SIZE + 1..10 * MIB),
        _ => rng.random_range(10 * MIB..=64 * MIB),
    }
}

/// A random script of `n` steps: mostly allocations, some frees of live blocks and, when
/// `empty_cache` is set, the odd `empty_cache()`.
pub(super) fn random_script(rng: &mut impl rand::Rng, n: usize, empty_cache: bool) -> Vec<Step> {
    let mut script = Vec::new();
    let mut live: Vec<usize> = Vec::new();
    for i in 0..n {
        let roll = rng.random_range(0..10);
        if roll < 6 || live.is_empty() {
            script.push(Step::Alloc(random_request(rng)));
            live.push(i);
        } else if roll < 9 || !empty_cache {
            let k = rng.random_range(0..live.len());
            script.push(Step::Free(live.swap_remove(k)));
        } else {
            script.push(Step::EmptyCache);
        }
    }
    script
}
