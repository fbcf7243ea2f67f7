//! Challenge 4 — fitting more on the card.
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this folder.
//!
//! **The core** (about 20 minutes; `cargo test` passes once it does): `peak_bytes` for float32
//! without checkpointing — Challenge 1's equation, the whole batch at once or in micro-batches
//! — and `loss_scale`. The grader compares your equation with the peak the engine plans.
//!
//! **Going further** (graded and reported after the core, optional; `cargo test -- --ignored`
//! asks for them too): the other arms of `peak_bytes` (float64, checkpointing, mixed precision,
//! the strategies together), then `choose_settings`, which the grader runs through the engine
//! to check three rules:
//!
//! 1. **fits** — one update with your settings does not run out of memory on the card;
//! 2. **same effective batch** — `accumulation_steps` micro-batches of `micro_batch` rows are
//!    the engine's split of the batch: `micro_batch = ⌈batch / accumulation_steps⌉`;
//! 3. **nothing needless** — the grader switches each strategy you used off in turn (float32
//!    instead of your precision, no checkpointing, one micro-batch fewer); if the step then
//!    needs at most 95 % of the card (before the allocator's rounding, as `peak_bytes` counts)
//!    and fits when the engine plans it on the card, that strategy was not needed.
//!
//! To start again from the stub: `git checkout -- src/answer.rs` (in `exercises/challenge4`).
#![allow(unused_variables, unused_imports)]

use grading::challenge4::{Checkpointing, Precision, Settings};
use grading::{Opt, Setup};

// ANCHOR: peak_bytes
/// Bytes in use at the busiest moment of one optimizer update of `setup` run with
/// `settings` (before the allocator's rounding).
pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
    match (settings.precision, settings.checkpointing) {
        // The core: float32, the whole batch at once or in micro-batches.
        (Precision::Float32, Checkpointing::Off) => {
            todo!("Challenge 1's equation, one micro-batch at a time")
        }
        // Going further, one arm at a time (the grader reports each apart).
        (Precision::Float64, Checkpointing::Off) => todo!("going further 1: float64"),
        (Precision::Float32, _) => todo!("going further 2: checkpointing"),
        (Precision::Mixed, Checkpointing::Off) => todo!("going further 3: mixed precision"),
        _ => todo!("going further 4: checkpointing with mixed precision or float64"),
    }
}
// ANCHOR_END: peak_bytes

// ANCHOR: choose_settings
/// Going further 5: settings that make one update of `setup` fit a card of `card_bytes`
/// without changing its batch, using no strategy that is not needed.
pub fn choose_settings(setup: Setup, card_bytes: u64) -> Settings {
    todo!("try the cheapest settings first, and stop at the first that fits")
}
// ANCHOR_END: choose_settings

// ANCHOR: loss_scale
/// The factor micro-batch number `index` (0 is the first) multiplies its
/// mean loss by, when `batch` rows are split into `accumulation_steps`
/// micro-batches the engine's way, so that the gradients they add up to are
/// the whole batch's mean gradient.
pub fn loss_scale(batch: u64, accumulation_steps: u64, index: u64) -> f64 {
    todo!("how much this micro-batch's mean counts in the batch's mean")
}
// ANCHOR_END: loss_scale
