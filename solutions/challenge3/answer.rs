//! Challenge 3 — a reference solution.
#![allow(unused_imports)]

use gpumem::Error;
use gpumem::alloc::{
    LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
};
use gpumem::data::Split;
use gpumem::mlp::{Batch, Mlp, StepOutputs};
use grading::challenge3::{Block, FreeBlock, Pool, Step};

// ANCHOR: rounded_size
/// The size the allocator looks for when `requested` bytes are asked for: the
/// request rounded up to a multiple of 512 B, and 512 B at least (PyTorch's
/// `round_size`).
pub fn rounded_size(requested: u64) -> u64 {
    requested.max(1).div_ceil(MIN_BLOCK) * MIN_BLOCK
}
// ANCHOR_END: rounded_size

// ANCHOR: pool_for
/// The pool that serves a request of `requested` bytes.
pub fn pool_for(requested: u64) -> Pool {
    if rounded_size(requested) <= SMALL_SIZE {
        Pool::Small
    } else {
        Pool::Large
    }
}
// ANCHOR_END: pool_for

// ANCHOR: segment_for
/// The bytes the allocator reserves from the device for a request of
/// `requested` bytes when no cached block fits (PyTorch's
/// `get_allocation_size`).
pub fn segment_for(requested: u64) -> u64 {
    let size = rounded_size(requested);
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}
// ANCHOR_END: segment_for

// ANCHOR: best_fit
/// The index in `free` of the block a request of `size` bytes (already
/// rounded) takes, or `None` when no cached block fits. Best fit: a block of
/// the request's pool; the smallest that is large enough; among blocks of
/// that size, the lowest address — the lower segment, then the lower offset.
pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
    free.iter()
        .enumerate()
        .filter(|(_, b)| b.pool == pool_for(size) && b.size >= size)
        .min_by_key(|(_, b)| (b.size, b.segment, b.offset))
        .map(|(i, _)| i)
}
// ANCHOR_END: best_fit

// ANCHOR: split
/// What a free block of `block_size` bytes gives a request of `size` bytes
/// (already rounded): `(handed out, left free)`. The rest becomes a free
/// block of its own only when it is useful — 512 B or more in the small pool,
/// more than 1 MiB in the large pool; otherwise the whole block is handed out
/// and the second number is 0.
pub fn split(block_size: u64, size: u64) -> (u64, u64) {
    let rest = block_size - size;
    let useful = match pool_for(size) {
        Pool::Small => rest >= MIN_BLOCK,
        Pool::Large => rest > SMALL_SIZE,
    };
    if useful {
        (size, rest)
    } else {
        (block_size, 0)
    }
}
// ANCHOR_END: split

// ANCHOR: free_block
/// The blocks of a segment (in address order) after its block at `index` is
/// freed: the freed block merges with a free neighbour on either side.
pub fn free_block(segment: &[Block], index: usize) -> Vec<Block> {
    let mut blocks = segment.to_vec();
    blocks[index].allocated = false;
    let mut merged: Vec<Block> = Vec::new();
    for b in blocks {
        match merged.last_mut() {
            Some(prev) if !prev.allocated && !b.allocated => prev.size += b.size,
            _ => merged.push(b),
        }
    }
    merged
}
// ANCHOR_END: free_block

// ANCHOR: memory_after
/// `(memory_allocated(), memory_reserved())` after each step of `steps`,
/// starting from an empty cache. `Step::Free(i)` frees the block of the
/// `Step::Alloc` at index `i`.
pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
    // Every segment ever reserved, in order: its pool and blocks; `None` once given back.
    let mut segments: Vec<Option<(Pool, Vec<Block>)>> = Vec::new();
    // Where each allocation's block lives: (segment, offset).
    let mut placed: Vec<Option<(usize, u64)>> = vec![None; steps.len()];
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Alloc(requested) => placed[i] = Some(allocate(&mut segments, requested)),
            Step::Free(j) => {
                if let Some((s, offset)) = placed[j].take()
                    && let Some((_, blocks)) = &mut segments[s]
                {
                    *blocks = free_block(blocks, index_at(blocks, offset));
                }
            }
            // A segment with no live block is one free block after merging: give it back.
            Step::EmptyCache => {
                for seg in &mut segments {
                    if seg
                        .as_ref()
                        .is_some_and(|(_, b)| b.iter().all(|b| !b.allocated))
                    {
                        *seg = None;
                    }
                }
            }
        }
        // Reserved: every held segment, whose blocks tile it; allocated: the blocks in use.
        let blocks: Vec<&Block> = segments.iter().flatten().flat_map(|(_, b)| b).collect();
        let allocated = blocks.iter().filter(|b| b.allocated).map(|b| b.size).sum();
        out.push((allocated, blocks.iter().map(|b| b.size).sum()));
    }
    out
}

/// Serves one request: best fit from the cache, else a new segment; then
/// splits the block.
fn allocate(segments: &mut Vec<Option<(Pool, Vec<Block>)>>, requested: u64) -> (usize, u64) {
    let size = rounded_size(requested);
    let free = free_blocks(segments);
    let (s, offset) = match best_fit(&free, size) {
        Some(k) => (free[k].segment, free[k].offset),
        None => {
            let block = Block {
                size: segment_for(requested),
                allocated: false,
            };
            segments.push(Some((pool_for(requested), vec![block])));
            (segments.len() - 1, 0)
        }
    };
    let (_, blocks) = segments[s].as_mut().expect("a held segment");
    let k = index_at(blocks, offset);
    let (handed, rest) = split(blocks[k].size, size);
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

/// Every free block of the held segments, for `best_fit`.
fn free_blocks(segments: &[Option<(Pool, Vec<Block>)>]) -> Vec<FreeBlock> {
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

/// The index of the block that starts `offset` bytes into a segment.
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
// ANCHOR_END: memory_after

// ANCHOR: train
/// Trains `mlp` on `batches` for `epochs` epochs and returns each epoch's
/// mean loss.
pub fn train(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
    let mut losses = Vec::new();
    for _ in 0..epochs {
        let (mut sum, mut rows) = (0.0f64, 0u64);
        for batch in batches {
            // Keep the loss as a number; the step's device tensors drop here.
            let result = mlp.train_step(Batch::Data(batch))?;
            sum += f64::from(result.loss.unwrap_or(f32::NAN)) * result.rows as f64;
            rows += result.rows;
        }
        losses.push((sum / rows.max(1) as f64) as f32);
    }
    Ok(losses)
}
// ANCHOR_END: train
