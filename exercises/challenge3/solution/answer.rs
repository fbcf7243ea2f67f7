//! Challenge 3 — a reference solution.
#![allow(unused_imports)]

use challenge3::grader::Step;
use gpumem::Error;
use gpumem::data::Split;
use gpumem::mlp::{Batch, Mlp, StepOutputs};

const MIB: u64 = 1 << 20;

// ANCHOR: rounded_size
/// A request of `requested` bytes rounded the way the allocator rounds every request
/// (PyTorch's `round_size`): the size of block it looks for. The block it finally hands out
/// can be larger still — when cutting it from a segment would leave 1 MiB or less in the large
/// pool, it hands out the whole segment (a 19.5 MiB request gets a 20 MiB block) — but that is
/// `segment_for`'s and `memory_after`'s business, not this function's.
pub fn rounded_size(requested: u64) -> u64 {
    requested.max(1).div_ceil(512) * 512
}
// ANCHOR_END: rounded_size

// ANCHOR: segment_for
/// The bytes the allocator reserves from the device for a request of `requested` bytes when
/// nothing is cached yet.
pub fn segment_for(requested: u64) -> u64 {
    let size = rounded_size(requested);
    if size <= MIB {
        2 * MIB // the small pool's segments
    } else if size < 10 * MIB {
        20 * MIB // shared by large requests under 10 MiB
    } else {
        size.div_ceil(2 * MIB) * 2 * MIB
    }
}
// ANCHOR_END: segment_for

// ANCHOR: memory_after
/// `(memory_allocated(), memory_reserved())` after each step of `steps`, starting from an
/// empty cache. `Step::Free(i)` frees the block of the `Step::Alloc` at index `i`.
pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
    // Every block: (segment, offset, size, in use), kept in address order per segment.
    struct Block {
        segment: usize,
        offset: u64,
        size: u64,
        used: bool,
    }
    let mut segments: Vec<Option<(u64, bool)>> = Vec::new(); // (size, small pool)
    let mut blocks: Vec<Block> = Vec::new();
    let mut owner: Vec<Option<(usize, u64)>> = vec![None; steps.len()]; // (segment, offset)
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Alloc(requested) => {
                let size = rounded_size(requested);
                let small = size <= MIB;
                // Best fit: the smallest free block of this pool that is large enough
                // (ties go to the lower address: older segments have lower addresses).
                let fit = blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| !b.used && b.size >= size)
                    .filter(|(_, b)| segments[b.segment].is_some_and(|s| s.1 == small))
                    .min_by_key(|(_, b)| (b.size, b.segment, b.offset))
                    .map(|(k, _)| k);
                let k = fit.unwrap_or_else(|| {
                    segments.push(Some((segment_for(requested), small)));
                    blocks.push(Block {
                        segment: segments.len() - 1,
                        offset: 0,
                        size: segment_for(requested),
                        used: false,
                    });
                    blocks.len() - 1
                });
                let rest = blocks[k].size - size;
                let split = if small { rest >= 512 } else { rest > MIB };
                if split {
                    let (segment, offset) = (blocks[k].segment, blocks[k].offset);
                    blocks[k].size = size;
                    blocks.push(Block {
                        segment,
                        offset: offset + size,
                        size: rest,
                        used: false,
                    });
                }
                blocks[k].used = true;
                owner[i] = Some((blocks[k].segment, blocks[k].offset));
            }
            Step::Free(j) => {
                if let Some((segment, offset)) = owner[j].take() {
                    if let Some(b) = blocks
                        .iter_mut()
                        .find(|b| b.segment == segment && b.offset == offset)
                    {
                        b.used = false;
                    }
                    // Merge free neighbours in the segment.
                    blocks.sort_by_key(|b| (b.segment, b.offset));
                    let mut merged: Vec<Block> = Vec::new();
                    for b in blocks.drain(..) {
                        match merged.last_mut() {
                            Some(p) if p.segment == b.segment && !p.used && !b.used => {
                                p.size += b.size
                            }
                            _ => merged.push(b),
                        }
                    }
                    blocks = merged;
                }
            }
            Step::EmptyCache => {
                // A segment whose one block is free is unused: give it back.
                for (s, seg) in segments.iter_mut().enumerate() {
                    let Some((size, _)) = *seg else { continue };
                    if blocks
                        .iter()
                        .any(|b| b.segment == s && !b.used && b.size == size)
                    {
                        *seg = None;
                        blocks.retain(|b| b.segment != s);
                    }
                }
            }
        }
        let allocated = blocks.iter().filter(|b| b.used).map(|b| b.size).sum();
        let reserved = segments.iter().flatten().map(|s| s.0).sum();
        out.push((allocated, reserved));
    }
    out
}
// ANCHOR_END: memory_after

// ANCHOR: train
/// Trains `mlp` on `batches` for `epochs` epochs and returns each epoch's mean loss.
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
