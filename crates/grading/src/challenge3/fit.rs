//! Step 2: best fit. The cache is a state the engine's allocator reached on a script; the
//! expected block is the one the allocator then takes for the request (or none, when it
//! reserves a new segment).

use super::engine::{MIB, Replay, exact, random_request, random_script};
use super::{Answers, FreeBlock, Step, steps};
use crate::{Report, attempt_timed};
use gpumem::alloc::{pool_for, round_size};
use rand::RngExt;
use rand::seq::SliceRandom;

/// Fixed states and requests, each catching one slip.
fn fixed() -> Vec<(Vec<Step>, u64)> {
    use Step::*;
    vec![
        // Free 5 MiB then free 3 MiB in one segment: the smaller fits (not the first).
        (
            vec![
                Alloc(5 * MIB),
                Alloc(2 * MIB),
                Alloc(3 * MIB),
                Alloc(10 * MIB),
                Free(0),
                Free(2),
            ],
            2 * MIB + MIB / 2,
        ),
        // Two free 1 MiB blocks: segment 0 at 1 MiB, segment 1 at 0 (the tie-break).
        (
            vec![
                Alloc(MIB),
                Alloc(MIB),
                Alloc(MIB),
                Alloc(MIB),
                Free(1),
                Free(2),
            ],
            MIB,
        ),
        // A whole free small segment (2 MiB) cannot serve a large request.
        (vec![Alloc(MIB), Alloc(MIB), Free(0), Free(1)], MIB + 512),
        // Nothing large enough: a new segment.
        (vec![Alloc(12 * MIB), Alloc(12 * MIB), Free(0)], 13 * MIB),
        // An exact fit beats a larger block at a lower address.
        (
            vec![
                Alloc(12 * MIB),
                Alloc(4 * MIB),
                Alloc(12 * MIB),
                Free(0),
                Free(1),
            ],
            4 * MIB,
        ),
    ]
}

/// A random state with a request that often fits a free block exactly or nearly.
fn random_case(rng: &mut impl rand::Rng) -> (Vec<Step>, u64) {
    let n = rng.random_range(6..=12);
    let script = random_script(rng, n, false);
    let free = Replay::of(&script).free_blocks();
    let request = match free.get(rng.random_range(0..free.len().max(1))) {
        Some(b) if rng.random_bool(0.7) => b.size - rng.random_range(0..=b.size.min(4096)),
        _ => random_request(rng),
    };
    (script, request)
}

/// What the engine takes: the index in `free` of the block it serves `size` from.
fn engine_pick(script: &[Step], free: &[FreeBlock], size: u64) -> Option<usize> {
    let mut replay = Replay::of(script);
    replay.step(Step::Alloc(size));
    let (seg, index) = replay.segment_of(script.len())?;
    let offset = seg.blocks[index].addr - seg.addr;
    let segment = seg.blocks[index].segment as usize;
    free.iter()
        .position(|b| b.segment == segment && b.offset == offset)
}

/// Why the block picked is not the one the allocator takes.
fn diagnose(free: &[FreeBlock], size: u64, expected: Option<usize>, got: Option<usize>) -> String {
    let pool = pool_for(size);
    let Some(g) = got else {
        return "a cached block is large enough: the allocator reuses it before reserving a new \
                segment"
            .into();
    };
    let Some(b) = free.get(g) else {
        return format!("return an index into `free` (it has {} blocks)", free.len());
    };
    if b.pool != pool {
        return format!(
            "only blocks of the request's own pool can serve it: this request is for the {pool:?} \
             pool, that block is in the {:?} pool",
            b.pool
        );
    }
    if b.size < size {
        return "the block must be large enough for the rounded request".into();
    }
    match expected.map(|e| free[e]) {
        None => "no block of the request's pool is large enough: return None (the allocator \
                 reserves a new segment)"
            .into(),
        Some(e) if e.size < b.size => "best fit: the smallest block that is large enough, not \
                                       the first one that is"
            .into(),
        Some(_) => "a tie: among blocks of the same size the allocator takes the one at the \
                    lowest address — the lower segment first, then the lower offset within it. \
                    PyTorch's rule is size, then address; that a later segment lies higher is \
                    the engine's layout (on a card, cudaMalloc chooses the address)"
            .into(),
    }
}

/// Grades step 2: each state in address order and reversed, so that neither "the first
/// one in the list" nor "the last one" can pass by luck.
pub(super) fn grade_best_fit(answers: &Answers, report: &mut Report, rng: &mut impl rand::Rng) {
    let mut cases = fixed();
    cases.extend((0..10).map(|_| random_case(rng)));
    for (k, (script, requested)) in cases.into_iter().enumerate() {
        let size = round_size(requested).expect("small requests round");
        let in_order = Replay::of(&script).free_blocks();
        let mut reversed = in_order.clone();
        reversed.reverse();
        let mut shuffled = in_order.clone();
        shuffled.shuffle(rng);
        let orders = if k < fixed().len() {
            vec![in_order, reversed]
        } else {
            vec![shuffled]
        };
        for free in orders {
            let expected = engine_pick(&script, &free, size);
            let got = {
                let (f, free) = (answers.best_fit, free.clone());
                attempt_timed(f as usize, move || f(&free, size))
            };
            let hint = match &got {
                Ok(g) => diagnose(&free, size, expected, *g),
                Err(_) => String::new(),
            };
            report.compare(
                steps::BEST_FIT,
                format!(
                    "best_fit({}, {}) after [{}]",
                    list(&free),
                    exact(size),
                    super::describe(&script)
                ),
                &expected,
                "the index of the block the engine's allocator took; None: it reserved a new \
                 segment",
                got,
                if hint.is_empty() {
                    "best fit: the request's pool, the smallest block large enough, ties to the \
                     lowest address"
                        .into()
                } else {
                    hint
                },
            );
        }
    }
}

/// Free blocks in words: `[0: Small 1 MiB @ seg 0 + 1 MiB, …]`.
fn list(free: &[FreeBlock]) -> String {
    let items: Vec<String> = free
        .iter()
        .enumerate()
        .map(|(i, b)| {
            format!(
                "{i}: {:?} {} @ segment {} + {}",
                b.pool,
                exact(b.size),
                b.segment,
                exact(b.offset)
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}
