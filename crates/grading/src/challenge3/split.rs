//! Step 3: split. A block of `block_size` serves a rounded request of `size`: the expected
//! answer is what the engine's split rule (`should_split`, the rule its allocator applies)
//! hands out and what it leaves as a free block.

use super::engine::{MIB, exact};
use super::{Answers, steps};
use crate::{Report, attempt_timed};
use gpumem::alloc::{MIN_BLOCK, Pool, SMALL_BUFFER, SMALL_SIZE, pool_for, should_split};
use rand::RngExt;

/// `(block_size, size)` at each threshold, then seeded random ones.
fn cases(rng: &mut impl rand::Rng) -> Vec<(u64, u64)> {
    let mut c = vec![
        (SMALL_BUFFER, 512),
        (1024, 512),
        (512, 512),
        // Small pool: the request's pool decides, not the 2 MiB block's size.
        (SMALL_BUFFER, SMALL_SIZE),
        (20 * MIB, 4 * MIB),
        // Exactly 1 MiB left: not split.
        (20 * MIB, 19 * MIB),
        // 1 MiB and 512 B left: split.
        (20 * MIB, 19 * MIB - 512),
        (20 * MIB, 19 * MIB + MIB / 2),
        (12 * MIB, 12 * MIB),
        (30 * MIB, 10 * MIB),
    ];
    for _ in 0..10 {
        let size = match rng.random_range(0..2) {
            0 => rng.random_range(1..=SMALL_SIZE / MIN_BLOCK) * MIN_BLOCK,
            _ => rng.random_range(SMALL_SIZE / MIN_BLOCK + 1..=64 * MIB / MIN_BLOCK) * MIN_BLOCK,
        };
        let limit = if pool_for(size) == Pool::Small {
            SMALL_BUFFER - size
        } else {
            3 * MIB
        };
        let rest = rng.random_range(0..=limit / MIN_BLOCK) * MIN_BLOCK;
        c.push((size + rest, size));
    }
    c
}

/// The engine's answer: `(handed out, left free)`.
fn engine_split(block_size: u64, size: u64) -> (u64, u64) {
    if should_split(size, block_size, None, false) {
        (size, block_size - size)
    } else {
        (block_size, 0)
    }
}

/// Why a split is off.
fn diagnose(block_size: u64, size: u64, got: (u64, u64)) -> String {
    let rest = block_size - size;
    let splits = should_split(size, block_size, None, false);
    let pool = pool_for(size);
    if got.0.checked_add(got.1) != Some(block_size) {
        return "what is handed out and what is left add up to the whole block".into();
    }
    match (pool, splits) {
        (Pool::Small, true) => "the small pool splits whenever 512 B or more would be left — \
                                the request's pool decides, not the block's size"
            .into(),
        (Pool::Small, false) => "nothing would be left: the whole block is handed out".into(),
        (Pool::Large, true) => "the large pool splits when more than 1 MiB would be left; the \
                                request gets its rounded size and the rest stays cached"
            .into(),
        (Pool::Large, false) if rest == SMALL_SIZE => "more than 1 MiB, not 1 MiB or more: \
                                                       with exactly 1 MiB left the large pool \
                                                       hands out the whole block"
            .into(),
        (Pool::Large, false) => "the large pool splits only when more than 1 MiB would be \
                                 left; otherwise the whole block is handed out and counts as \
                                 allocated (a 19.5 MiB request gets all of a 20 MiB block)"
            .into(),
    }
}

/// Grades step 3.
pub(super) fn grade_split(answers: &Answers, report: &mut Report, rng: &mut impl rand::Rng) {
    for (block_size, size) in cases(rng) {
        let expected = engine_split(block_size, size);
        let got = {
            let f = answers.split;
            attempt_timed(f as usize, move || f(block_size, size))
        };
        let hint = match &got {
            Ok(g) => diagnose(block_size, size, *g),
            Err(_) => String::new(),
        };
        report.compare(
            steps::SPLIT,
            format!(
                "split(block {}, request {}) — {:?} pool",
                exact(block_size),
                exact(size),
                pool_for(size)
            ),
            &expected,
            format!(
                "(handed out, left free) by the engine's rule: {} handed out, {} left",
                exact(expected.0),
                exact(expected.1)
            ),
            got,
            if hint.is_empty() {
                "split when the rest is useful: 512 B or more in the small pool, more than 1 MiB \
                 in the large one"
                    .into()
            } else {
                hint
            },
        );
    }
}
