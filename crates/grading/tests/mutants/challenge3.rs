//! Challenge 3's reference solution, its allocator's rules rewritten once with a knob per
//! one-edit mistake: a rounding constant off by one, `<` for `<=` at a pool's or a segment
//! size's boundary, a split's or a best fit's rule — and `memory_after`, on the edit's own
//! rules, with edits of its own (the cache emptied wrongly, requested bytes counted, no reuse,
//! no split). `train` is the reference's.

use gpumem::alloc::{
    LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
};
use grading::challenge3::{Answers, Block, FreeBlock, Pool, Step};

#[path = "../../../../solutions/challenge3/answer.rs"]
#[allow(dead_code)]
mod solution;

// One edit each (`M`), every edit but `None` (`ALL`) and each edit's answers (`variants`).
mutations!(
    RoundNoMax,
    RoundExactUp,
    RoundOneShort,
    PoolLess,
    PoolOfRequested,
    SegmentSmallLess,
    SegmentLargeLessEqual,
    SegmentExactUp,
    SegmentUnrounded,
    SegmentSmallBufferOneMiB,
    SplitSmallGreater,
    SplitLargeGreaterEqual,
    SplitPoolOfBlock,
    BestFitAnyPool,
    BestFitGreater,
    BestFitFirst,
    BestFitNoTieBreak,
    FreeNoMerge,
    EmptyCacheIgnored,
    EmptyCacheAnyFree,
    AllocatedRequested,
    NeverReuse,
    NeverSplit,
    FreeWrongBlock
);

/// Edits that change no answer: the pool of the requested size is the pool of the rounded one,
/// as 1 MiB is a multiple of 512 bytes.
pub const EQUIVALENT: &[M] = &[M::PoolOfRequested];

/// Edits the grader does not catch.
pub const STILL_MISSED: &[M] = &[];

fn rounded_size<const E: u8>(requested: u64) -> u64 {
    let on = |m: M| E == m as u8;
    if on(M::RoundNoMax) {
        requested.div_ceil(MIN_BLOCK) * MIN_BLOCK
    } else if on(M::RoundExactUp) {
        (requested / MIN_BLOCK + 1) * MIN_BLOCK
    } else if on(M::RoundOneShort) {
        (requested.max(1) + MIN_BLOCK - 2) / MIN_BLOCK * MIN_BLOCK
    } else {
        solution::rounded_size(requested)
    }
}

fn pool_for<const E: u8>(requested: u64) -> Pool {
    let on = |m: M| E == m as u8;
    let small = if on(M::PoolLess) {
        rounded_size::<E>(requested) < SMALL_SIZE
    } else if on(M::PoolOfRequested) {
        requested <= SMALL_SIZE
    } else {
        rounded_size::<E>(requested) <= SMALL_SIZE
    };
    if small { Pool::Small } else { Pool::Large }
}

fn segment_for<const E: u8>(requested: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let size = rounded_size::<E>(requested);
    let small = if on(M::SegmentSmallLess) {
        size < SMALL_SIZE
    } else {
        size <= SMALL_SIZE
    };
    let buffer = if on(M::SegmentLargeLessEqual) {
        size <= MIN_LARGE_ALLOC
    } else {
        size < MIN_LARGE_ALLOC
    };
    if small {
        if on(M::SegmentSmallBufferOneMiB) {
            SMALL_SIZE
        } else {
            SMALL_BUFFER
        }
    } else if buffer {
        LARGE_BUFFER
    } else if on(M::SegmentExactUp) {
        (size / ROUND_LARGE + 1) * ROUND_LARGE
    } else if on(M::SegmentUnrounded) {
        size
    } else {
        size.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}

fn best_fit<const E: u8>(free: &[FreeBlock], size: u64) -> Option<usize> {
    let on = |m: M| E == m as u8;
    let fits = |b: &FreeBlock| {
        (on(M::BestFitAnyPool) || b.pool == pool_for::<E>(size))
            && if on(M::BestFitGreater) {
                b.size > size
            } else {
                b.size >= size
            }
    };
    let mut candidates = free.iter().enumerate().filter(|(_, b)| fits(b));
    if on(M::BestFitFirst) {
        candidates.next().map(|(i, _)| i)
    } else if on(M::BestFitNoTieBreak) {
        candidates.min_by_key(|(_, b)| b.size).map(|(i, _)| i)
    } else {
        candidates
            .min_by_key(|(_, b)| (b.size, b.segment, b.offset))
            .map(|(i, _)| i)
    }
}

fn split<const E: u8>(block_size: u64, size: u64) -> (u64, u64) {
    let on = |m: M| E == m as u8;
    let rest = block_size - size;
    let pool = if on(M::SplitPoolOfBlock) {
        pool_for::<E>(block_size)
    } else {
        pool_for::<E>(size)
    };
    let useful = match pool {
        Pool::Small if on(M::SplitSmallGreater) => rest > MIN_BLOCK,
        Pool::Small => rest >= MIN_BLOCK,
        Pool::Large if on(M::SplitLargeGreaterEqual) => rest >= SMALL_SIZE,
        Pool::Large => rest > SMALL_SIZE,
    };
    if useful {
        (size, rest)
    } else {
        (block_size, 0)
    }
}

fn free_block<const E: u8>(segment: &[Block], index: usize) -> Vec<Block> {
    if E == M::FreeNoMerge as u8 {
        let mut blocks = segment.to_vec();
        blocks[index].allocated = false;
        return blocks;
    }
    solution::free_block(segment, index)
}

type Segments = Vec<Option<(Pool, Vec<Block>)>>;

fn memory_after<const E: u8>(steps: &[Step]) -> Vec<(u64, u64)> {
    let on = |m: M| E == m as u8;
    let mut segments: Segments = Vec::new();
    let mut placed: Vec<Option<(usize, u64)>> = vec![None; steps.len()];
    let mut requested_of: Vec<u64> = vec![0; steps.len()];
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Alloc(requested) => {
                requested_of[i] = requested;
                placed[i] = Some(allocate::<E>(&mut segments, requested));
            }
            Step::Free(j) => {
                let j = if on(M::FreeWrongBlock) && j > 0 && placed[j - 1].is_some() {
                    j - 1
                } else {
                    j
                };
                if let Some((s, offset)) = placed[j].take()
                    && let Some((_, blocks)) = &mut segments[s]
                {
                    *blocks = free_block::<E>(blocks, index_at(blocks, offset));
                }
            }
            Step::EmptyCache if on(M::EmptyCacheIgnored) => {}
            Step::EmptyCache => {
                for seg in &mut segments {
                    let release = seg.as_ref().is_some_and(|(_, b)| {
                        if on(M::EmptyCacheAnyFree) {
                            b.iter().any(|b| !b.allocated)
                        } else {
                            b.iter().all(|b| !b.allocated)
                        }
                    });
                    if release {
                        *seg = None;
                    }
                }
            }
        }
        let blocks: Vec<&Block> = segments.iter().flatten().flat_map(|(_, b)| b).collect();
        let allocated = if on(M::AllocatedRequested) {
            placed
                .iter()
                .zip(&requested_of)
                .filter(|(p, _)| p.is_some())
                .map(|(_, r)| r)
                .sum()
        } else {
            blocks.iter().filter(|b| b.allocated).map(|b| b.size).sum()
        };
        out.push((allocated, blocks.iter().map(|b| b.size).sum()));
    }
    out
}

fn allocate<const E: u8>(segments: &mut Segments, requested: u64) -> (usize, u64) {
    let on = |m: M| E == m as u8;
    let size = rounded_size::<E>(requested);
    let free = free_blocks(segments);
    let found = if on(M::NeverReuse) {
        None
    } else {
        best_fit::<E>(&free, size)
    };
    let (s, offset) = match found {
        Some(k) => (free[k].segment, free[k].offset),
        None => {
            let block = Block {
                size: segment_for::<E>(requested),
                allocated: false,
            };
            segments.push(Some((pool_for::<E>(requested), vec![block])));
            (segments.len() - 1, 0)
        }
    };
    let (_, blocks) = segments[s].as_mut().expect("a held segment");
    let k = index_at(blocks, offset);
    let (handed, rest) = if on(M::NeverSplit) {
        (blocks[k].size, 0)
    } else {
        split::<E>(blocks[k].size, size)
    };
    blocks[k] = Block {
        size: handed,
        allocated: true,
    };
    if rest > 0 {
        let rest = Block {
            size: rest,
            allocated: false,
        };
        blocks.insert(k + 1, rest);
    }
    (s, offset)
}

fn free_blocks(segments: &Segments) -> Vec<FreeBlock> {
    let mut free = Vec::new();
    for (segment, seg) in segments.iter().enumerate() {
        let Some((pool, blocks)) = seg else { continue };
        let mut offset = 0;
        for b in blocks {
            if !b.allocated {
                free.push(FreeBlock {
                    pool: *pool,
                    size: b.size,
                    segment,
                    offset,
                });
            }
            offset += b.size;
        }
    }
    free
}

fn index_at(blocks: &[Block], offset: u64) -> usize {
    let mut at = 0;
    blocks
        .iter()
        .position(|b| {
            let here = at == offset;
            at += b.size;
            here
        })
        .expect("a block starts there")
}

/// The answers with edit `E`.
fn answers<const E: u8>() -> Answers {
    Answers {
        rounded_size: rounded_size::<E>,
        pool_for: pool_for::<E>,
        segment_for: segment_for::<E>,
        best_fit: best_fit::<E>,
        split: split::<E>,
        free_block: free_block::<E>,
        memory_after: memory_after::<E>,
        train: solution::train,
    }
}
