//! Challenge 5 — a reference solution.
#![allow(unused_imports)]

use grading::Setup;
use grading::challenge5::{MAX_CARDS, Scheme, largest_share, terms};

// ANCHOR: card_bytes
/// The most bytes any one card of `cards` holds at once when `setup` trains under `scheme`.
/// `setup.batch` is the global batch: the cards split it, the first ones taking a row more
/// when it does not divide evenly.
pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
    let n = cards;
    // The fullest card's rows: one card's figures at its share of the batch.
    let rows = setup.batch.div_ceil(n);
    let t = terms(Setup {
        batch: rows,
        ..setup
    });
    let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
    let (acts, layer, held) = (t.activations, t.largest_layer, t.held_in_update);
    // Each moment: parameters + gradients + optimizer state, and on top either the
    // activations (before the update) or the update's temporaries beside what the loop
    // still holds (the batch, the output, the loss).
    match scheme {
        // Every card runs the whole single-card step; plain DDP's buckets are a second
        // copy of the gradients, there all the time.
        Scheme::Ddp => t.step_peak + p,
        // The gradients are views of the buckets, so they exist all step long.
        Scheme::DdpBucketView => 2 * p + state + acts.max(temps + held),
        // ZeRO-1: only the optimizer state (and so its update) is divided, in whole
        // parameters: the fullest card updates `largest_share` of them.
        Scheme::Zero1 => {
            let share = largest_share(setup, n);
            let part = |bytes: u64| bytes / p * share;
            2 * p + part(state) + acts.max(part(temps) + held)
        }
        // ZeRO-2: shards at rest. At the top of the backward pass every layer gathered in
        // the forward pass is still whole; at its bottom the gradients' shards exist, and
        // the last layer is whole with its fresh gradient and a reduce-scatter buffer.
        Scheme::Zero2 => {
            let top = p / n + p + state / n + acts;
            let bottom = 2 * p / n + state / n + 3 * layer;
            top.max(bottom).max((2 * p + state + temps) / n + held)
        }
        // ZeRO-3: the running layer gathered whole and the next one prefetched; at the
        // bottom of the backward pass the gradients' shards, a fresh gradient and a
        // reduce-scatter buffer. The model is built whole on the card before it is sharded.
        Scheme::Zero3 => {
            let top = p / n + state / n + acts + 2 * layer;
            let bottom = 2 * p / n + state / n + 3 * layer;
            let update = (2 * p + state + temps) / n + held;
            let construction = p + layer / n;
            top.max(bottom).max(update).max(construction)
        }
        // Not graded: a pipeline splits the layers, not the batch.
        _ => 2 * p + state + acts.max(temps + held),
    }
}
// ANCHOR_END: card_bytes

// ANCHOR: fewest_cards
/// The fewest cards, from 1 to [`MAX_CARDS`], on which `setup` (its global batch) trains
/// under `scheme` on cards of `card_capacity` bytes; `None` if no number up to it does.
pub fn fewest_cards(setup: Setup, scheme: Scheme, card_capacity: u64) -> Option<u64> {
    (1..=MAX_CARDS).find(|&n| card_bytes(setup, scheme, n) <= card_capacity)
}
// ANCHOR_END: fewest_cards
