//! Challenge 3: watching memory.
//!
//! Part 1: the learner predicts the caching allocator — the rounded size of a request, the
//! segment it reserves, and `(allocated, reserved)` after each step of a short script of
//! allocations, frees and `empty_cache()` calls. Answers are compared with the engine's own
//! allocator running the same scripts (fixed ones that teach, and seeded random ones).
//!
//! Part 2: the learner fixes a training loop that leaks. The grader runs it through the engine
//! on the cpu backing (kernels run) and compares the peak memory after 1, 2 and 3 epochs, and
//! with twice as many steps: a loop that keeps nothing alive peaks at the same bytes every
//! time. It must still train: its per-epoch losses must match a plain loop's.

use gpumem::Error;
use gpumem::alloc::{Allocator, AllocatorConfig, BlockAddr, segment_size};
use gpumem::data::Split;
use gpumem::device::Backing;
use gpumem::mlp::Mlp;
use grading::{Report, attempt};
use rand::{RngExt, SeedableRng};
use std::fmt;

mod training;
use training::grade_training;

// ANCHOR: step
/// One step of an allocation script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Allocate this many bytes.
    Alloc(u64),
    /// Free the block allocated by the step at this index (always an `Alloc`).
    Free(usize),
    /// `torch.cuda.empty_cache()`: give unused cached segments back to the device.
    EmptyCache,
}
// ANCHOR_END: step

/// A training loop: trains on the batches for some epochs, returns each epoch's loss.
pub type TrainFn = fn(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error>;

/// A loop's losses (or its error, in words) and the peak allocated bytes of its run.
type LoopRun = (Result<Vec<f32>, String>, u64);

/// The learner's functions.
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub rounded_size: fn(requested: u64) -> u64,
    pub segment_for: fn(requested: u64) -> u64,
    pub memory_after: fn(steps: &[Step]) -> Vec<(u64, u64)>,
    pub train: TrainFn,
}

/// `Answers` from a module that defines the four functions.
#[macro_export]
macro_rules! answers_of {
    ($($m:ident)::+) => {
        $crate::grader::Answers {
            rounded_size: $($m)::+::rounded_size,
            segment_for: $($m)::+::segment_for,
            memory_after: $($m)::+::memory_after,
            train: $($m)::+::train,
        }
    };
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// Bytes exactly, in the largest unit that divides them: `3 MiB`, `1 KiB`, `1000 B`.
pub fn exact(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

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

/// A script in words: `alloc 1000 B, alloc 3 MiB, free #0, empty_cache`.
pub fn describe(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| match s {
            Step::Alloc(b) => format!("alloc {}", exact(*b)),
            Step::Free(i) => format!("free #{i}"),
            Step::EmptyCache => "empty_cache".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The engine's allocator (default settings, no capacity) running `steps`.
pub fn engine_memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
    let mut a = Allocator::new(Backing::Plan, AllocatorConfig::default())
        .expect("default settings are valid");
    let mut blocks: Vec<Option<BlockAddr>> = vec![None; steps.len()];
    let mut out = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        match *step {
            Step::Alloc(b) => blocks[i] = Some(a.malloc(b, "t").expect("no capacity, no limit")),
            Step::Free(j) => {
                let block = blocks[j].take().expect("scripts free each block once");
                a.free(block).expect("the block is allocated");
            }
            Step::EmptyCache => a.empty_cache(),
        }
        out.push((a.allocated(), a.reserved()));
    }
    out
}

/// The engine's rounding and segment for one request (read off a one-step run).
fn engine_one(requested: u64) -> (u64, u64) {
    engine_memory_after(&[Step::Alloc(requested)])[0]
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
            "every request is rounded up to a multiple of 512 bytes, and a large block is not \
             split when 1 MiB or less would be left over, so the whole block counts as allocated"
        }
        Step::Alloc(_) if g.1 < e.1 => {
            "when no cached block fits, the allocator reserves a whole segment: 2 MiB for a \
             request up to 1 MiB (the small pool), 20 MiB up to 10 MiB, else the size rounded \
             up to 2 MiB"
        }
        Step::Alloc(_) => {
            "before reserving a new segment the allocator reuses cached memory: the smallest \
             free block that is large enough (best fit), in a segment of the request's pool — \
             small requests share 2 MiB segments"
        }
        Step::Free(_) if g.1 < e.1 => {
            "freeing does not give memory back to the device: the block stays cached, so \
             reserved is unchanged until empty_cache()"
        }
        Step::Free(_) => {
            "a free gives back the whole block the request was rounded to (allocated drops by \
             that much); reserved does not change"
        }
        Step::EmptyCache => {
            "empty_cache() gives back only segments with no live block in them; a segment that \
             still holds a live block stays reserved, and allocated never changes"
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
    ];
    let sizes = |rng: &mut dyn rand::Rng| -> u64 {
        match rng.random_range(0..4) {
            0 => rng.random_range(1..=4096),
            1 => rng.random_range(4096..=SMALL_MAX),
            2 => rng.random_range(SMALL_MAX + 1..10 * MIB),
            _ => rng.random_range(10 * MIB..=64 * MIB),
        }
    };
    for _ in 0..12 {
        let n = rng.random_range(4..=9);
        let mut script = Vec::new();
        let mut live: Vec<usize> = Vec::new();
        for i in 0..n {
            let roll = rng.random_range(0..10);
            if roll < 6 || live.is_empty() {
                script.push(Alloc(sizes(rng)));
                live.push(i);
            } else if roll < 9 {
                let k = rng.random_range(0..live.len());
                script.push(Free(live.swap_remove(k)));
            } else {
                script.push(EmptyCache);
            }
        }
        s.push(script);
    }
    s
}

const SMALL_MAX: u64 = MIB;

/// Grades part 1.
fn grade_allocator(answers: &Answers, report: &mut Report, rng: &mut impl rand::Rng) {
    let mut requests: Vec<u64> = vec![
        1,
        512,
        513,
        1000,
        4096,
        MIB,
        MIB + 1,
        3 * MIB,
        10 * MIB - 1,
        10 * MIB,
        12 * MIB + 1,
        19 * MIB + MIB / 2,
        100 * MIB + 3,
    ];
    requests.extend((0..8).map(|_| match rng.random_range(0..3) {
        0 => rng.random_range(1..=SMALL_MAX),
        1 => rng.random_range(SMALL_MAX + 1..10 * MIB),
        _ => rng.random_range(10 * MIB..=200 * MIB),
    }));
    for &r in &requests {
        let block = gpumem::alloc::round_size(r).expect("small requests round");
        report.compare(
            "rounded_size",
            format!("rounded_size({r})"),
            &block,
            "the request as the engine's allocator rounds it (round_size)",
            attempt(|| (answers.rounded_size)(r)),
            "requests are rounded up to a multiple of 512 bytes (and nothing is smaller than \
             512 B)",
        );
    }
    for &r in &requests {
        let reserved = engine_one(r).1;
        debug_assert_eq!(Some(reserved), segment_size(block_of(r)));
        report.compare(
            "segment_for",
            format!("segment_for({r} = {})", exact(r)),
            &reserved,
            format!(
                "{}: reserved by the engine's allocator on an empty cache",
                exact(reserved)
            ),
            attempt(|| (answers.segment_for)(r)),
            "the allocator never asks the device for just the request: up to 1 MiB it takes a \
             2 MiB segment (the small pool), below 10 MiB a 20 MiB segment, and larger requests \
             the size rounded up to a multiple of 2 MiB — round to 512 bytes first",
        );
    }
    for script in scripts(rng) {
        let expected = engine_memory_after(&script);
        let got = attempt(|| (answers.memory_after)(&script));
        let hint = match &got {
            Ok(g) => diagnose(&script, &expected, g),
            Err(_) => String::new(),
        };
        report.compare(
            "memory_after",
            format!("memory_after([{}])", describe(&script)),
            &Memory(expected),
            "(allocated, reserved) after each step, from the engine's allocator",
            got.map(Memory),
            if hint.is_empty() {
                "simulate the cache: pools, segments, best fit, split and merge, empty_cache"
                    .to_string()
            } else {
                hint
            },
        );
    }
}

fn block_of(r: u64) -> u64 {
    gpumem::alloc::round_size(r).expect("small requests round")
}

/// Grades `answers`, with random cases drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    let mut report = Report::new("Challenge 3 (watching memory)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    grade_allocator(answers, &mut report, &mut rng);
    grade_training(answers, &mut report);
    report
}
