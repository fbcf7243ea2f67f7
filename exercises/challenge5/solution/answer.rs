//! Challenge 5 — a reference solution.
#![allow(unused_imports)]

use challenge5::grader::{MAX_CARDS, Scheme, terms};
use grading::Setup;

// ANCHOR: card_bytes
/// The most bytes any one card of `cards` holds at once when `setup` trains under `scheme`.
/// `setup.batch` is the batch of ONE card: every card trains on that many rows, so a card's
/// activations do not shrink as cards are added.
pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
    let t = terms(setup);
    let n = cards;
    let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
    let (acts, layer) = (t.activations, t.largest_layer);
    // Each moment: parameters + gradients + optimizer state, and on top either the
    // activations (before the update) or the update's temporaries.
    match scheme {
        // Every card holds everything; plain DDP's buckets are a second copy of the
        // gradients.
        Scheme::Ddp => 3 * p + state + acts.max(temps),
        // The gradients are views of the buckets; a layer's fresh gradient waits to be
        // copied into its bucket.
        Scheme::DdpBucketView => 2 * p + state + (acts + layer).max(temps),
        // ZeRO-1: only the optimizer state (and so its update) is divided.
        Scheme::Zero1 => 2 * p + state / n + (acts + layer).max(temps / n),
        // ZeRO-2: shards at rest, but every layer gathered in the forward pass stays whole
        // until its backward pass; its all-gather and reduce-scatter buffers beside.
        Scheme::Zero2 => {
            let backward = p / n + p + state / n + acts + 2 * layer;
            backward.max((2 * p + state + temps) / n)
        }
        // ZeRO-3: the running layer gathered, the next one prefetched, a buffer for the
        // gradient; the model is built whole on the card before it is sharded.
        Scheme::Zero3 => {
            let backward = 2 * p / n + state / n + acts + 3 * layer;
            let update = (2 * p + state + temps) / n;
            let construction = p + layer / n;
            backward.max(update).max(construction)
        }
        // Not graded: a pipeline splits the layers, not the batch.
        _ => 2 * p + state + acts.max(temps),
    }
}
// ANCHOR_END: card_bytes

// ANCHOR: fewest_cards
/// The fewest cards, from 1 to [`MAX_CARDS`], on which `setup` (its per-card batch) trains
/// under `scheme` on cards of `card_capacity` bytes; `None` if no number up to it does.
pub fn fewest_cards(setup: Setup, scheme: Scheme, card_capacity: u64) -> Option<u64> {
    (1..=MAX_CARDS).find(|&n| card_bytes(setup, scheme, n) <= card_capacity)
}
// ANCHOR_END: fewest_cards
