//! Challenge 5 — more than one card.
//!
//! Replace each `todo!()` with your answer, then run `cargo test` in this
//! folder: the grader compares what your functions return with what the engine
//! measures when it plans the same setups on a group of cards. [`terms`] gives
//! you one card's figures (parameters, the largest layer, optimizer state, the
//! update's temporaries, activations, what the loop holds during the update);
//! what each scheme does with them is the exercise. The pipeline schemes are
//! not graded here. To start again from the stub:
//! `git checkout -- src/answer.rs` (in `exercises/challenge5`).
#![allow(unused_variables, unused_imports)]

use grading::Setup;
use grading::challenge5::{MAX_CARDS, Scheme, largest_share, terms};

// ANCHOR: card_bytes
/// The most bytes any one card of `cards` holds at once when `setup` trains
/// under `scheme`. `setup.batch` is the GLOBAL batch: the cards split it, each
/// training on its own rows (`⌈batch / cards⌉` on the fullest), so a card's
/// activations shrink as cards are added. `terms` of a setup with that batch
/// gives one card's figures at those rows.
pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
    todo!("what each card keeps whole, divides by the cards, or adds")
}
// ANCHOR_END: card_bytes

// ANCHOR: fewest_cards
/// The fewest cards, from 1 to [`MAX_CARDS`], on which `setup` (its global
/// batch) trains under `scheme` on cards of `capacity` bytes; `None` if no
/// number up to it does.
pub fn fewest_cards(setup: Setup, scheme: Scheme, capacity: u64) -> Option<u64> {
    todo!("add cards until one card's bytes fit")
}
// ANCHOR_END: fewest_cards
