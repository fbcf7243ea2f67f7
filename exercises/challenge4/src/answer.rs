//! Challenge 4 — fitting more on the card.
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this folder: the grader
//! compares your equation with the peak the engine plans, and runs your settings through the
//! engine to check three rules:
//!
//! 1. **fits** — one update with your settings does not run out of memory on the card;
//! 2. **same effective batch** — `accumulation_steps` micro-batches of `micro_batch` rows are
//!    the engine's split of the batch: `micro_batch = ⌈batch / accumulation_steps⌉`;
//! 3. **nothing needless** — the grader switches each strategy you used off in turn (float32
//!    instead of your precision, no checkpointing, one micro-batch fewer); if the step then
//!    needs at most 95 % of the card (before the allocator's rounding, as `peak_bytes` counts),
//!    that strategy was not needed.
//!
//! Last, it compares your `loss_scale` with the factor the engine's gradient accumulation
//! scales each micro-batch's loss by.
//!
//! To start again from the stub: `git checkout -- exercises/challenge4/src/answer.rs`.
#![allow(unused_variables, unused_imports)]

use grading::challenge4::{Checkpointing, Precision, Settings};
use grading::{Opt, Setup};

// ANCHOR: peak_bytes
/// Bytes in use at the busiest moment of one optimizer update of `setup` run with
/// `settings` (before the allocator's rounding).
pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
    todo!("Challenge 1's equation, with each strategy's effect on its terms")
}
// ANCHOR_END: peak_bytes

// ANCHOR: choose_settings
/// Settings that make one update of `setup` fit a card of `card_bytes` without changing its
/// batch, using no strategy that is not needed.
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
