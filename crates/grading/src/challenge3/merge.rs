//! Step 4: freeing a block. A segment's blocks come from a state the engine's allocator
//! reached on a script; the expected blocks are that segment's after the engine frees one.

use super::engine::{MIB, Replay, blocks_of, exact, random_script};
use super::{Answers, Block, Step, steps};
use crate::{Report, attempt_timed};
use rand::RngExt;

/// Fixed scripts and the step whose block is then freed: each neighbour case once.
fn fixed() -> Vec<(Vec<Step>, usize)> {
    use Step::*;
    let four = vec![Alloc(4 * MIB); 4]; // one 20 MiB segment: 4 × 4 MiB, 4 MiB free
    let with = |extra: &[Step]| [four.clone(), extra.to_vec()].concat();
    vec![
        // Only the block before is free.
        (with(&[Free(0)]), 1),
        // Only the block after is free.
        (with(&[Free(2)]), 1),
        // Both neighbours free: three blocks become one.
        (with(&[Free(0), Free(2)]), 1),
        // The last block: merges with the free rest of the segment.
        (four.clone(), 3),
        // The first block, its neighbour in use: nothing to merge.
        (four, 0),
        // Small pool: 700 KiB blocks in a 2 MiB segment.
        (vec![Alloc(700 << 10), Alloc(700 << 10), Free(0)], 1),
    ]
}

/// A random state with one of its live blocks to free.
fn random_case(rng: &mut impl rand::Rng) -> (Vec<Step>, usize) {
    loop {
        let n = rng.random_range(5..=12);
        let script = random_script(rng, n, false);
        let replay = Replay::of(&script);
        let live: Vec<usize> = (0..script.len())
            .filter(|&i| replay.live.get(i).copied().flatten().is_some())
            .collect();
        if !live.is_empty() {
            let pick = live[rng.random_range(0..live.len())];
            return (script, pick);
        }
    }
}

/// The freed block's segment before and after the engine frees it, and its index.
fn engine_free(script: &[Step], freed: usize) -> (Vec<Block>, usize, Vec<Block>) {
    let mut replay = Replay::of(script);
    let (seg, index) = replay.segment_of(freed).expect("the block is live");
    replay.step(Step::Free(freed));
    let after = replay
        .alloc
        .segments()
        .into_iter()
        .find(|s| s.addr == seg.addr)
        .expect("a free keeps the segment");
    (blocks_of(&seg), index, blocks_of(&after))
}

/// Why the segment after the free is off.
fn diagnose(before: &[Block], index: usize, got: &[Block]) -> String {
    let total: u64 = before.iter().map(|b| b.size).sum();
    if got.iter().map(|b| b.size).sum::<u64>() != total {
        return "the blocks still tile the segment: their sizes add up to the segment's".into();
    }
    if got.windows(2).any(|w| !w[0].allocated && !w[1].allocated) {
        let left = index > 0 && !before[index - 1].allocated;
        let right = before.get(index + 1).is_some_and(|b| !b.allocated);
        return match (left, right) {
            (true, false) => "the freed block merges with the free block before it too (not only with the one after)",
            (false, true) => "the freed block merges with the free block after it too (not only with the one before)",
            _ => {
                "a freed block merges with both free neighbours: no two free blocks are side \
                  by side"
            }
        }
        .into();
    }
    "only the freed block changes: it becomes free and takes in its free neighbours; blocks in \
     use stay as they are"
        .into()
}

/// Blocks in words: `[4 MiB used, 16 MiB free]`.
fn list(blocks: &[Block]) -> String {
    let items: Vec<String> = blocks
        .iter()
        .map(|b| {
            let state = if b.allocated { "used" } else { "free" };
            format!("{} {state}", exact(b.size))
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// Blocks printed in words in the report.
#[derive(Clone, PartialEq, Eq)]
struct Segment(Vec<Block>);

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&list(&self.0))
    }
}

/// Grades step 4.
pub(super) fn grade_free_block(answers: &Answers, report: &mut Report, rng: &mut impl rand::Rng) {
    let mut cases = fixed();
    cases.extend((0..8).map(|_| random_case(rng)));
    for (script, freed) in cases {
        let (before, index, after) = engine_free(&script, freed);
        let got = {
            let (f, before) = (answers.free_block, before.clone());
            attempt_timed(f as usize, move || f(&before, index))
        };
        let hint = match &got {
            Ok(g) => diagnose(&before, index, g),
            Err(_) => String::new(),
        };
        report.compare(
            steps::FREE_BLOCK,
            format!("free_block({}, {index})", list(&before)),
            &Segment(after),
            "the segment's blocks after the engine's allocator frees that block",
            got.map(Segment),
            if hint.is_empty() {
                "the freed block merges with its free neighbours".into()
            } else {
                hint
            },
        );
    }
}
