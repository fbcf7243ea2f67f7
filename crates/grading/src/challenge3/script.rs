//! Step 5: a whole script — `(allocated, reserved)` after each step, compared with the
//! engine's allocator running the same script.

use super::engine::{KIB, MIB, describe, engine_memory_after, exact, random_script};
use super::{Answers, Step, steps};
use crate::{Report, attempt_timed};
use rand::RngExt;
use std::fmt;

/// `(allocated, reserved)` pairs, printed in exact units.
#[derive(Clone, PartialEq, Eq)]
struct Memory(Vec<(u64, u64)>);

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, r)| format!("({}, {})", exact(*a), exact(*r)))
            .collect();
        write!(f, "[{}]", parts.join(", "))
    }
}

/// Why a predicted script is off, from the first step where it differs.
fn diagnose(steps: &[Step], expected: &[(u64, u64)], got: &[(u64, u64)]) -> String {
    if got.len() != expected.len() {
        return format!(
            "return one (allocated, reserved) pair per step: {} steps, {} pairs",
            expected.len(),
            got.len()
        );
    }
    let Some(i) = (0..expected.len()).find(|&i| expected[i] != got[i]) else {
        return String::new();
    };
    let (e, g) = (expected[i], got[i]);
    let at = format!(
        "first wrong after step #{i} ({}): ",
        describe(&steps[i..=i])
    );
    let why = match steps[i] {
        Step::Alloc(_) if e.0 != g.0 => {
            "allocated grows by the block handed out: the request rounded to 512 bytes (step \
             1), or the whole block when it is not split (step 3)"
        }
        Step::Alloc(_) if g.1 < e.1 => {
            "when no cached block fits, the allocator reserves a whole segment: 2 MiB for a \
             request up to 1 MiB (the small pool), 20 MiB below 10 MiB, else the size rounded \
             up to 2 MiB (step 1)"
        }
        Step::Alloc(_) => {
            "before reserving a new segment the allocator reuses cached memory: the best fit \
             among the free blocks of the request's pool (step 2) — small requests share 2 MiB \
             segments"
        }
        Step::Free(_) if g.1 < e.1 => {
            "freeing does not give memory back to the device: the block stays cached, so \
             reserved is unchanged until empty_cache()"
        }
        Step::Free(_) => {
            "a free gives back the whole block the request was handed (allocated drops by that \
             much); reserved does not change"
        }
        Step::EmptyCache => {
            "empty_cache() gives back only segments with no live block in them (one free block \
             after merging, step 4); a segment that still holds a live block stays reserved, \
             and allocated never changes"
        }
    };
    at + why
}

/// Scripts that teach one rule each, then seeded random ones.
fn scripts(rng: &mut impl rand::Rng) -> Vec<Vec<Step>> {
    use Step::*;
    let mut s = vec![
        vec![Alloc(1000)],
        vec![Alloc(1000), Alloc(1000), Free(0), Alloc(500)],
        vec![Alloc(3 * MIB), Free(0), EmptyCache],
        vec![Alloc(1000), Alloc(1000), Free(0), EmptyCache],
        vec![Alloc(4 * MIB); 5],
        vec![Alloc(12 * MIB + 1), Alloc(MIB), Alloc(MIB + 1)],
        vec![Alloc(30 * MIB), Free(0), Alloc(10 * MIB), Alloc(19 * MIB)],
        vec![Alloc(19 * MIB + MIB / 2), Free(0), EmptyCache, Alloc(1)],
        vec![
            Alloc(700 * KIB),
            Alloc(700 * KIB),
            Alloc(700 * KIB),
            Free(1),
            Alloc(600 * KIB),
        ],
        // Freed neighbours merge, and the merged block is reused whole.
        vec![
            Alloc(4 * MIB),
            Alloc(4 * MIB),
            Alloc(4 * MIB),
            Free(0),
            Free(1),
            Alloc(8 * MIB),
            Free(2),
            EmptyCache,
        ],
    ];
    for _ in 0..12 {
        let n = rng.random_range(4..=9);
        s.push(random_script(rng, n, true));
    }
    s
}

/// Grades step 5.
pub(super) fn grade_scripts(answers: &Answers, report: &mut Report, rng: &mut impl rand::Rng) {
    for script in scripts(rng) {
        let expected = engine_memory_after(&script);
        let got = {
            let (f, script) = (answers.memory_after, script.clone());
            attempt_timed(f as usize, move || f(&script))
        };
        let hint = match &got {
            Ok(g) => diagnose(&script, &expected, g),
            Err(_) => String::new(),
        };
        report.compare(
            steps::MEMORY_AFTER,
            format!("memory_after([{}])", describe(&script)),
            &Memory(expected),
            "(allocated, reserved) after each step, from the engine's allocator",
            got.map(Memory),
            if hint.is_empty() {
                "simulate the cache with steps 1 to 4: round, best fit or a new segment, split; \
                 free and merge; empty_cache"
                    .to_string()
            } else {
                hint
            },
        );
    }
}
