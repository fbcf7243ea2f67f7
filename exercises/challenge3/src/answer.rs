//! Challenge 3 — watching memory.
//!
//! Part 1: predict the caching allocator. Replace each `todo!()` with your answer; the grader
//! runs the engine's allocator on the same requests and scripts and compares. The rules (the
//! book's page on the allocator has them with pictures):
//! - a request is rounded up to a multiple of 512 bytes (512 B at least);
//! - up to 1 MiB it comes from the small pool, carved out of 2 MiB segments; larger requests
//!   come from the large pool: below 10 MiB out of 20 MiB segments, from 10 MiB on out of a
//!   segment of the size rounded up to 2 MiB;
//! - a request takes the smallest free block of its pool that is large enough (best fit) and
//!   splits off the rest if at least 512 B (small pool) or more than 1 MiB (large pool) would
//!   be left; otherwise it takes the whole block, and the whole block counts as allocated;
//! - a freed block stays cached (reserved) and merges with free neighbours in its segment;
//!   only `empty_cache()` gives whole unused segments back to the device.
//!
//! Part 2: `train` leaks. Fix it so its memory stays flat, epoch after epoch.
//!
//! Run `cargo test` in this folder to grade. To start again from the stub:
//! `git checkout -- exercises/challenge3/src/answer.rs`.
#![allow(unused_variables, unused_imports)]

use challenge3::grader::Step;
use gpumem::Error;
use gpumem::data::Split;
use gpumem::mlp::{Batch, Mlp, StepOutputs};

// ANCHOR: rounded_size
/// A request of `requested` bytes rounded the way the allocator rounds every request
/// (PyTorch's `round_size`): the size of block it looks for. The block it finally hands out
/// can be larger still — when cutting it from a segment would leave 1 MiB or less in the large
/// pool, it hands out the whole segment (a 19.5 MiB request gets a 20 MiB block) — but that is
/// `segment_for`'s and `memory_after`'s business, not this function's.
pub fn rounded_size(requested: u64) -> u64 {
    todo!("round the request the way the allocator does")
}
// ANCHOR_END: rounded_size

// ANCHOR: segment_for
/// The bytes the allocator reserves from the device for a request of `requested` bytes when
/// nothing is cached yet.
pub fn segment_for(requested: u64) -> u64 {
    todo!("the segment a request makes the allocator reserve")
}
// ANCHOR_END: segment_for

// ANCHOR: memory_after
/// `(memory_allocated(), memory_reserved())` after each step of `steps`, starting from an
/// empty cache. `Step::Free(i)` frees the block of the `Step::Alloc` at index `i`.
pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
    todo!("simulate the cache, step by step")
}
// ANCHOR_END: memory_after

// ANCHOR: train
/// Trains `mlp` on `batches` for `epochs` epochs and returns each epoch's mean loss.
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
