//! Plausible wrong answers to part 1, one module per slip, grouped by step: each is the
//! reference solution with one function got wrong.

// Step 1: one request.

/// Forgetting the 512-byte rounding.
pub mod no_rounding {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, segment_for, split, train,
    };
    pub fn rounded_size(requested: u64) -> u64 {
        requested
    }
}

/// Rounding to whole MiB, as if the block handed out were the rounded size.
pub mod rounding_to_mib {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, segment_for, split, train,
    };
    pub fn rounded_size(requested: u64) -> u64 {
        requested.max(1).div_ceil(1 << 20) << 20
    }
}

/// The block handed out on an empty cache instead of the rounded request (a 19.5 MiB
/// request answered with 20 MiB).
pub mod block_handed_out {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, segment_for, split, train,
    };
    pub fn rounded_size(requested: u64) -> u64 {
        let size = crate::solution::rounded_size(requested);
        split(segment_for(requested), size).0
    }
}

/// The small pool without its upper bound: 1 MiB itself sent to the large pool.
pub mod small_pool_below_1mib {
    pub use crate::solution::{
        best_fit, free_block, memory_after, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::Pool;
    pub fn pool_for(requested: u64) -> Pool {
        if rounded_size(requested) < 1 << 20 {
            Pool::Small
        } else {
            Pool::Large
        }
    }
}

/// Rounding to 512 but sizing segments as if the device gave exactly what was asked.
pub mod no_small_segment {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, split, train,
    };
    pub fn segment_for(requested: u64) -> u64 {
        let size = rounded_size(requested);
        if size < 10 << 20 {
            size
        } else {
            size.div_ceil(2 << 20) * (2 << 20)
        }
    }
}

/// A 10 MiB request put in a shared 20 MiB segment (the boundary taken as "up to 10 MiB").
pub mod ten_mib_shares_a_segment {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, split, train,
    };
    pub fn segment_for(requested: u64) -> u64 {
        let size = rounded_size(requested);
        if size <= 1 << 20 {
            2 << 20
        } else if size <= 10 << 20 {
            20 << 20
        } else {
            size.div_ceil(2 << 20) * (2 << 20)
        }
    }
}

// Step 2: best fit.

/// First fit: the first block of the pool that is large enough.
pub mod first_fit {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        free.iter()
            .position(|b| b.pool == pool_for(size) && b.size >= size)
    }
}

/// Best fit without a tie-break: the first of the smallest blocks in the list.
pub mod no_tie_break {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        let fits = |b: &&FreeBlock| b.pool == pool_for(size) && b.size >= size;
        let best = free.iter().filter(fits).map(|b| b.size).min()?;
        free.iter()
            .position(|b| b.pool == pool_for(size) && b.size == best)
    }
}

/// Ties broken by offset alone, forgetting that segments have addresses too.
pub mod offset_tie_break {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        free.iter()
            .enumerate()
            .filter(|(_, b)| b.pool == pool_for(size) && b.size >= size)
            .min_by_key(|(_, b)| (b.size, b.offset))
            .map(|(i, _)| i)
    }
}

/// Best fit over both pools.
pub mod any_pool {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        free.iter()
            .enumerate()
            .filter(|(_, b)| b.size >= size)
            .min_by_key(|(_, b)| (b.size, b.segment, b.offset))
            .map(|(i, _)| i)
    }
}

// Step 3: split.

/// The large pool's threshold taken as "1 MiB or more".
pub mod split_at_one_mib_or_more {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, train,
    };
    use grading::challenge3::Pool;
    pub fn split(block_size: u64, size: u64) -> (u64, u64) {
        let rest = block_size - size;
        let useful = match pool_for(size) {
            Pool::Small => rest >= 512,
            Pool::Large => rest >= 1 << 20,
        };
        if useful {
            (size, rest)
        } else {
            (block_size, 0)
        }
    }
}

/// The pool read off the block's size instead of the request's.
pub mod pool_of_the_block {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, train,
    };
    use grading::challenge3::Pool;
    pub fn split(block_size: u64, size: u64) -> (u64, u64) {
        let rest = block_size - size;
        let useful = match pool_for(block_size) {
            Pool::Small => rest >= 512,
            Pool::Large => rest > 1 << 20,
        };
        if useful {
            (size, rest)
        } else {
            (block_size, 0)
        }
    }
}

// Step 4: free.

/// Merging only with the block after the freed one.
pub mod merge_right_only {
    pub use crate::solution::{
        best_fit, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::Block;
    pub fn free_block(segment: &[Block], index: usize) -> Vec<Block> {
        let mut blocks = segment.to_vec();
        blocks[index].allocated = false;
        if blocks.get(index + 1).is_some_and(|b| !b.allocated) {
            blocks[index].size += blocks.remove(index + 1).size;
        }
        blocks
    }
}

// Step 5: a whole script.

/// A simulation where a small request reserves only its rounded size.
pub mod small_reserves_itself {
    pub use crate::solution::{
        best_fit, free_block, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::Step;
    pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
        // Small requests: reserved grows by the block; large ones as the solution says.
        let mut out: Vec<(u64, u64)> = Vec::new();
        let solved = crate::solution::memory_after(steps);
        let mut extra_small = 0i64;
        for (i, s) in steps.iter().enumerate() {
            if let Step::Alloc(b) = s
                && rounded_size(*b) <= 1 << 20
            {
                extra_small += rounded_size(*b) as i64 - (2 << 20);
            }
            let (a, r) = solved[i];
            out.push((a, (r as i64 + extra_small).max(0) as u64));
        }
        out
    }
}

/// Thinking a free gives memory back to the device.
pub mod free_returns_memory {
    pub use crate::solution::{
        best_fit, free_block, pool_for, rounded_size, segment_for, split, train,
    };
    use grading::challenge3::Step;
    pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
        // Reserved follows allocated down on every free.
        let solved = crate::solution::memory_after(steps);
        let mut out = Vec::new();
        let mut freed = 0u64;
        for (i, s) in steps.iter().enumerate() {
            if let Step::Free(j) = s {
                let before = if *j == 0 { 0 } else { solved[*j - 1].0 };
                freed += solved[*j].0 - before.min(solved[*j].0);
            }
            let (a, r) = solved[i];
            out.push((a, r.saturating_sub(freed)));
        }
        out
    }
}
