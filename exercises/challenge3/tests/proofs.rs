//! Proofs that challenge 3's grader grades: the reference solution passes, the shipped stub
//! fails every step (part 1 "not attempted", part 2 because its loop leaks), and for every
//! step a plausible wrong answer fails on that step alone, with a hint that names the
//! mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use challenge3::answers_of;
use challenge3::grader::{grade, steps};
use grading::proofs::*;
use grading::{Outcome, seed};

#[path = "../solution/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_stub.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 140);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

#[test]
fn the_shipped_stub_fails_every_step() {
    let report = grade(&answers_of!(stub), seed());
    assert!(!report.passed());
    let part1 = [
        steps::ROUNDED_SIZE,
        steps::POOL_FOR,
        steps::SEGMENT_FOR,
        steps::BEST_FIT,
        steps::SPLIT,
        steps::FREE_BLOCK,
        steps::MEMORY_AFTER,
    ];
    for step in part1 {
        assert!(
            report.checks.iter().any(|c| c.function == step),
            "no checks for {step}"
        );
    }
    for c in &report.checks {
        if c.function != steps::TRAIN {
            assert_eq!(c.outcome, Outcome::NotAttempted, "{report}");
        }
    }
    let text = report.to_string();
    assert!(text.contains("not attempted yet"), "{text}");
    // The leaking loop still trains (its losses are right) but its peak climbs.
    let train: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.function == steps::TRAIN)
        .collect();
    assert!(train.iter().any(|c| c.outcome == Outcome::Fail), "{report}");
    assert!(train.iter().any(|c| c.outcome == Outcome::Pass), "{report}");
    assert!(text.contains("memory still grows"), "{text}");
}

// Step 1: one request.

/// Forgetting the 512-byte rounding.
mod no_rounding {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, segment_for, split, train,
    };
    pub fn rounded_size(requested: u64) -> u64 {
        requested
    }
}

/// Rounding to whole MiB, as if the block handed out were the rounded size.
mod rounding_to_mib {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, segment_for, split, train,
    };
    pub fn rounded_size(requested: u64) -> u64 {
        requested.max(1).div_ceil(1 << 20) << 20
    }
}

/// The block handed out on an empty cache instead of the rounded request (a 19.5 MiB
/// request answered with 20 MiB).
mod block_handed_out {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, segment_for, split, train,
    };
    pub fn rounded_size(requested: u64) -> u64 {
        let size = crate::solution::rounded_size(requested);
        split(segment_for(requested), size).0
    }
}

/// The small pool without its upper bound: 1 MiB itself sent to the large pool.
mod small_pool_below_1mib {
    pub use crate::solution::{
        best_fit, free_block, memory_after, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::Pool;
    pub fn pool_for(requested: u64) -> Pool {
        if rounded_size(requested) < 1 << 20 {
            Pool::Small
        } else {
            Pool::Large
        }
    }
}

/// Rounding to 512 but sizing segments as if the device gave exactly what was asked.
mod no_small_segment {
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
mod ten_mib_shares_a_segment {
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
mod first_fit {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        free.iter()
            .position(|b| b.pool == pool_for(size) && b.size >= size)
    }
}

/// Best fit without a tie-break: the first of the smallest blocks in the list.
mod no_tie_break {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        let fits = |b: &&FreeBlock| b.pool == pool_for(size) && b.size >= size;
        let best = free.iter().filter(fits).map(|b| b.size).min()?;
        free.iter()
            .position(|b| b.pool == pool_for(size) && b.size == best)
    }
}

/// Ties broken by offset alone, forgetting that segments have addresses too.
mod offset_tie_break {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::FreeBlock;
    pub fn best_fit(free: &[FreeBlock], size: u64) -> Option<usize> {
        free.iter()
            .enumerate()
            .filter(|(_, b)| b.pool == pool_for(size) && b.size >= size)
            .min_by_key(|(_, b)| (b.size, b.offset))
            .map(|(i, _)| i)
    }
}

/// Best fit over both pools.
mod any_pool {
    pub use crate::solution::{
        free_block, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::FreeBlock;
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
mod split_at_one_mib_or_more {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, train,
    };
    use challenge3::grader::Pool;
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
mod pool_of_the_block {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, train,
    };
    use challenge3::grader::Pool;
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
mod merge_right_only {
    pub use crate::solution::{
        best_fit, memory_after, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::Block;
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
mod small_reserves_itself {
    pub use crate::solution::{
        best_fit, free_block, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::Step;
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
mod free_returns_memory {
    pub use crate::solution::{
        best_fit, free_block, pool_for, rounded_size, segment_for, split, train,
    };
    use challenge3::grader::Step;
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

// Part 2: the leak.

/// A "fix" that empties the cache after every step but still keeps the outputs.
mod empty_cache_fix {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, split,
    };
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::{Batch, Mlp};
    pub fn train(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        let mut kept = Vec::new();
        let mut losses = Vec::new();
        for _ in 0..epochs {
            let (mut sum, mut rows) = (0.0f64, 0u64);
            for batch in batches {
                let (r, outputs) = mlp.train_step_with_outputs(Batch::Data(batch))?;
                sum += f64::from(r.loss.unwrap_or(f32::NAN)) * r.rows as f64;
                rows += r.rows;
                kept.push(outputs);
                mlp.device().empty_cache();
            }
            losses.push((sum / rows as f64) as f32);
        }
        Ok(losses)
    }
}

/// A "fix" that forgets the history each epoch: flat across epochs, growing within one.
mod per_epoch_history {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, split,
    };
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::{Batch, Mlp};
    pub fn train(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        let mut losses = Vec::new();
        for _ in 0..epochs {
            let mut epoch = Vec::new();
            for batch in batches {
                epoch.push(mlp.train_step_with_outputs(Batch::Data(batch))?.1);
            }
            let mut sum = 0.0f64;
            let mut rows = 0u64;
            for o in &epoch {
                let n = o.logits.rows();
                sum += o.loss.read_f64()?[0] * n as f64;
                rows += n;
            }
            losses.push((sum / rows as f64) as f32);
        }
        Ok(losses)
    }
}

/// A loop that stops leaking by not training.
mod no_training {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, split,
    };
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::Mlp;
    pub fn train(_mlp: &mut Mlp, _batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        Ok(vec![0.0; epochs as usize])
    }
}

#[test]
fn step1_slips_fail_with_their_hint() {
    let cases: [(challenge3::grader::Answers, &str, &str); 5] = [
        (answers_of!(no_rounding), steps::ROUNDED_SIZE, "512"),
        (
            answers_of!(rounding_to_mib),
            steps::ROUNDED_SIZE,
            "not 1 KiB or 1 MiB",
        ),
        (
            answers_of!(small_pool_below_1mib),
            steps::POOL_FOR,
            "1 MiB included",
        ),
        (answers_of!(no_small_segment), steps::SEGMENT_FOR, "2 MiB"),
        (
            answers_of!(ten_mib_shares_a_segment),
            steps::SEGMENT_FOR,
            "from 10 MiB on",
        ),
    ];
    for (answers, step, hint) in cases {
        fails_on(&grade(&answers, seed()), step, hint);
    }
}

#[test]
fn rounded_size_is_the_request_rounded_not_the_block_handed_out() {
    let report = grade(&answers_of!(block_handed_out), seed());
    fails_on(&report, steps::ROUNDED_SIZE, "step 3");
    let miss = report.misses().next().expect("it fails");
    assert!(
        miss.case.contains("19.5") || miss.case.contains("20447232"),
        "{report}"
    );
    assert!(
        miss.expected.contains("the block it hands out is 20 MiB"),
        "{report}"
    );
}

#[test]
fn step2_slips_fail_with_their_hint() {
    let cases: [(challenge3::grader::Answers, &str); 4] = [
        (
            answers_of!(first_fit),
            "the smallest block that is large enough",
        ),
        (answers_of!(no_tie_break), "lowest address"),
        (answers_of!(offset_tie_break), "the lower segment first"),
        (answers_of!(any_pool), "own pool"),
    ];
    for (answers, hint) in cases {
        fails_on(&grade(&answers, seed()), steps::BEST_FIT, hint);
    }
}

#[test]
fn step3_slips_fail_with_their_hint() {
    fails_on(
        &grade(&answers_of!(split_at_one_mib_or_more), seed()),
        steps::SPLIT,
        "more than 1 MiB, not 1 MiB or more",
    );
    fails_on(
        &grade(&answers_of!(pool_of_the_block), seed()),
        steps::SPLIT,
        "the request's pool decides",
    );
}

#[test]
fn step4_merging_one_side_only_fails() {
    fails_on(
        &grade(&answers_of!(merge_right_only), seed()),
        steps::FREE_BLOCK,
        "before it too",
    );
}

#[test]
fn step5_slips_fail_with_their_hint() {
    fails_on(
        &grade(&answers_of!(small_reserves_itself), seed()),
        steps::MEMORY_AFTER,
        "2 MiB",
    );
    fails_on(
        &grade(&answers_of!(free_returns_memory), seed()),
        steps::MEMORY_AFTER,
        "empty_cache",
    );
}

#[test]
fn a_fix_that_still_leaks_fails() {
    fails_on(
        &grade(&answers_of!(empty_cache_fix), seed()),
        steps::TRAIN,
        "empty_cache() cannot help",
    );
    fails_on(
        &grade(&answers_of!(per_epoch_history), seed()),
        steps::TRAIN,
        "grows with every step",
    );
}

#[test]
fn a_loop_that_does_not_train_fails() {
    fails_on(
        &grade(&answers_of!(no_training), seed()),
        steps::TRAIN,
        "train on every batch",
    );
}
