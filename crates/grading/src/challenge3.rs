//! Challenge 3: watching memory.
//!
//! The core (about 20 minutes), graded first: step 1, the size, pool and segment of one
//! request; and the leak, a training loop the learner makes flat. The grader runs the loop
//! through the engine on the cpu backing (kernels run) and compares the peak memory after 1,
//! 2 and 3 epochs, and with twice as many steps: a loop that keeps nothing alive peaks at the
//! same bytes every time. It must still train: its per-epoch losses must match a plain loop's.
//!
//! Going further (graded once attempted, see [`Report::verdict`]): steps 2–5
//! build the rest of the allocator — the cached block a request takes (best fit); how that
//! block is split; how a freed block merges with its neighbours; and, from those, `(allocated,
//! reserved)` after each step of a whole script. Every answer is compared with the engine's
//! own allocator (its rules, or a run of it on the same script), on fixed cases chosen to catch
//! the usual slips and on seeded random ones. Each step is its own group in the report, so a
//! learner sees which step passes and which one to fix next.

use crate::Report;
use gpumem::Error;
use gpumem::data::Split;
use gpumem::mlp::Mlp;
use rand::SeedableRng;

pub use gpumem::alloc::Pool;

mod engine;
mod fit;
mod merge;
mod script;
mod sizes;
mod split;
mod training;

pub use engine::{describe, engine_memory_after, exact};

// ANCHOR: step
/// One step of an allocation script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Allocate this many bytes.
    Alloc(u64),
    /// Free the block allocated by the step at this index (always an
    /// `Alloc`).
    Free(usize),
    /// `torch.cuda.empty_cache()`: give unused cached segments back to the
    /// device.
    EmptyCache,
}
// ANCHOR_END: step

// ANCHOR: free_block_type
/// A cached (free) block, as best fit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeBlock {
    /// The pool of the segment it was cut from.
    pub pool: Pool,
    /// Bytes.
    pub size: u64,
    /// Its segment: segments are numbered in the order they were reserved.
    /// The engine places each new segment above every earlier one, so a
    /// higher number is a higher address. That is the engine's choice, not
    /// CUDA's: on a real card `cudaMalloc` picks the address, and may hand a
    /// range freed by `empty_cache()` out again below older segments.
    pub segment: usize,
    /// Where it starts inside its segment, in bytes.
    pub offset: u64,
}
// ANCHOR_END: free_block_type

// ANCHOR: block_type
/// One block of a segment. A segment's blocks, in address order, tile it
/// exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Bytes.
    pub size: u64,
    /// In use by a tensor (`false`: cached, free for the next request).
    pub allocated: bool,
}
// ANCHOR_END: block_type

/// A training loop: trains on the batches for some epochs, returns each
/// epoch's loss.
pub type TrainFn = fn(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error>;

/// The learner's functions, one group per step.
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub rounded_size: fn(requested: u64) -> u64,
    pub pool_for: fn(requested: u64) -> Pool,
    pub segment_for: fn(requested: u64) -> u64,
    pub best_fit: fn(free: &[FreeBlock], size: u64) -> Option<usize>,
    pub split: fn(block_size: u64, size: u64) -> (u64, u64),
    pub free_block: fn(segment: &[Block], index: usize) -> Vec<Block>,
    pub memory_after: fn(steps: &[Step]) -> Vec<(u64, u64)>,
    pub train: TrainFn,
}

/// `Answers` from a module that defines the eight functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge3_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge3::Answers {
            rounded_size: $($m)::+::rounded_size,
            pool_for: $($m)::+::pool_for,
            segment_for: $($m)::+::segment_for,
            best_fit: $($m)::+::best_fit,
            split: $($m)::+::split,
            free_block: $($m)::+::free_block,
            memory_after: $($m)::+::memory_after,
            train: $($m)::+::train,
        }
    };
}

#[doc(inline)]
pub use crate::challenge3_answers_of as answers_of;

/// The report's group names: one per step, in the order the book presents
/// them.
pub mod steps {
    pub const ROUNDED_SIZE: &str = "step 1 (rounded_size)";
    pub const POOL_FOR: &str = "step 1 (pool_for)";
    pub const SEGMENT_FOR: &str = "step 1 (segment_for)";
    pub const BEST_FIT: &str = "step 2 (best_fit)";
    pub const SPLIT: &str = "step 3 (split)";
    pub const FREE_BLOCK: &str = "step 4 (free_block)";
    pub const MEMORY_AFTER: &str = "step 5 (memory_after)";
    pub const TRAIN: &str = "the leak (train)";
}

/// Grades `answers`, with random cases drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    let mut report = Report::new("Challenge 3 (watching memory)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // The core.
    sizes::grade_sizes(answers, &mut report, &mut rng);
    training::grade_training(answers, &mut report);
    // Going further.
    for step in [
        steps::BEST_FIT,
        steps::SPLIT,
        steps::FREE_BLOCK,
        steps::MEMORY_AFTER,
    ] {
        report.mark_going_further(step);
    }
    fit::grade_best_fit(answers, &mut report, &mut rng);
    split::grade_split(answers, &mut report, &mut rng);
    merge::grade_free_block(answers, &mut report, &mut rng);
    script::grade_scripts(answers, &mut report, &mut rng);
    report
}
