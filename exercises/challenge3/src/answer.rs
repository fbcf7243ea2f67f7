//! Challenge 3 — watching memory.
//!
//! Replace each `todo!()` with your answer and run `cargo test`: the grader compares every
//! step with the engine's own allocator and reports each step on its own.
//!
//! The core (about 20 minutes; `cargo test` passes when it does):
//! - step 1, one request: its rounded size, its pool, and the segment it reserves;
//! - the leak: `train` keeps memory alive. Fix it so its memory stays flat, epoch after epoch.
//!
//! Going further, the rest of the allocator (each graded once you replace its `todo!()`):
//! 2. best fit: which cached block a request takes;
//! 3. split: what that block hands out and what it leaves cached;
//! 4. free: how a freed block merges with its free neighbours;
//! 5. a whole script: `(allocated, reserved)` after each step, built from steps 1–4.
//!
//! The book's page "Monitoring memory" has the rules. To start again from the
//! stub: `git checkout -- src/answer.rs` (in `exercises/challenge3`).
#![allow(unused_variables, unused_imports)]

use gpumem::Error;
use grading::challenge3::{Block, FreeBlock, Pool, Step};
// PyTorch's constants, under its names: 512 B, 1 MiB, 2 MiB, 10 MiB, 20 MiB and 2 MiB.
use gpumem::alloc::{
    LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
};
use gpumem::data::Split;
use gpumem::mlp::{Batch, Mlp, StepOutputs};

// ANCHOR: rounded_size
/// Step 1. The size the allocator looks for when `requested` bytes are asked
/// for (PyTorch's `round_size`): the request rounded up to a multiple of
/// 512 B (`MIN_BLOCK`), and 512 B at least. This is not always the block
/// handed out: a 19.5 MiB request rounds to 19.5 MiB, but gets a whole 20 MiB
/// block, because the 0.5 MiB left would be too small to keep (step 3).
pub fn rounded_size(requested: u64) -> u64 {
    todo!("round the request the way the allocator does")
}
// ANCHOR_END: rounded_size

// ANCHOR: pool_for
/// Step 1. The pool that serves a request of `requested` bytes: `Pool::Small`
/// when its rounded size is at most 1 MiB (`SMALL_SIZE`), `Pool::Large`
/// above.
pub fn pool_for(requested: u64) -> Pool {
    todo!("the request's pool")
}
// ANCHOR_END: pool_for

// ANCHOR: segment_for
/// Step 1. The bytes the allocator reserves from the device for a request of
/// `requested` bytes when no cached block fits (PyTorch's
/// `get_allocation_size`): small requests share 2 MiB segments
/// (`SMALL_BUFFER`); large ones below 10 MiB (`MIN_LARGE_ALLOC`) share 20 MiB
/// segments (`LARGE_BUFFER`); from 10 MiB on, a segment of the size rounded
/// up to 2 MiB (`ROUND_LARGE`).
pub fn segment_for(requested: u64) -> u64 {
    todo!("the segment a request makes the allocator reserve")
}
// ANCHOR_END: segment_for

// ANCHOR: best_fit
/// Going further, step 2. The index in `free` (the cache's free blocks, in no
/// particular order) of the block a request of `size` bytes (already rounded)
/// takes, or `None` when none fits and the allocator must reserve a new
/// segment. Best fit: only blocks of the request's pool; the smallest that is
/// large enough; between blocks of that same size, the one at the lowest
/// address — the lower segment (the engine places each new segment above the
/// earlier ones), then the lower offset. (PyTorch keeps free blocks sorted by
/// size, then address, and takes the first that is large enough; on a real
/// card the segments' addresses are whatever `cudaMalloc` returned.)
pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
    todo!("pick the cached block the allocator takes")
}
// ANCHOR_END: best_fit

// ANCHOR: split
/// Going further, step 3. What a free block of `block_size` bytes gives a
/// request of `size` bytes (already rounded, of the block's pool): `(handed
/// out, left free)`. The rest becomes a free block of its own only when it is
/// worth keeping — at least 512 B in the small pool, more than 1 MiB in the
/// large pool (PyTorch's `should_split`); otherwise the whole block is handed
/// out (and counts as allocated) and nothing is left: `(block_size, 0)`.
pub fn split(block_size: u64, size: u64) -> (u64, u64) {
    todo!("split the block, or hand it out whole")
}
// ANCHOR_END: split

// ANCHOR: free_block
/// Going further, step 4. The blocks of one segment, in address order, after
/// its block at `index` is freed: the freed block merges with the free block
/// just before it and the one just after it, if they are free (PyTorch's
/// `free_block`). Blocks in use do not move.
pub fn free_block(segment: &[Block], index: usize) -> Vec<Block> {
    todo!("free the block and merge it with its free neighbours")
}
// ANCHOR_END: free_block

// ANCHOR: memory_after
/// Going further, step 5. `(memory_allocated(), memory_reserved())` after
/// each step of `steps`, starting from an empty cache. `Step::Free(i)` frees
/// the block of the `Step::Alloc` at index `i`. Build it from steps 1–4: keep
/// each segment's blocks; an allocation takes `best_fit` of the free blocks
/// or a new segment of `segment_for`, then `split`s it; a free is
/// `free_block`; `Step::EmptyCache` gives back every segment with no block in
/// use.
pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
    todo!("simulate the cache, step by step")
}
// ANCHOR_END: memory_after

// ANCHOR: train
/// Trains `mlp` on `batches` for `epochs` epochs and returns each epoch's
/// mean loss.
///
/// This loop runs out of memory after a few epochs on a real card. Fix it.
pub fn train(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
    // Every step's outputs, kept to work out the losses at the end.
    let mut history: Vec<Vec<StepOutputs>> = Vec::new();
    for _ in 0..epochs {
        let mut epoch = Vec::new();
        for batch in batches {
            let (_, outputs) = mlp.train_step_with_outputs(Batch::Data(batch))?;
            epoch.push(outputs);
        }
        history.push(epoch);
    }
    let mut losses = Vec::new();
    for epoch in &history {
        let (mut sum, mut rows) = (0.0f64, 0u64);
        for outputs in epoch {
            // `loss` is the batch's mean loss, one value; `logits` has one row per sample.
            let n = outputs.logits.rows();
            sum += outputs.loss.read_f64()?[0] * n as f64;
            rows += n;
        }
        losses.push((sum / rows.max(1) as f64) as f32);
    }
    Ok(losses)
}
// ANCHOR_END: train
