//! Proofs that challenge 5's grader grades (as rustlings does for its exercises): the
//! reference solution passes, the shipped stub fails as "not attempted", and plausible wrong
//! answers fail on the function they get wrong, with a hint that names the mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge5::answers_of;
use grading::challenge5::{Scheme, grade, terms};
use grading::proofs::*;
use grading::{Setup, seed};

#[path = "../../../solutions/challenge5/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge5.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 100);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

#[test]
fn the_shipped_stub_is_not_attempted() {
    not_attempted(&grade(&answers_of!(stub), seed()));
}

/// DDP as if it sharded like ZeRO-3: parameters, gradients and optimizer state divided by
/// the cards.
mod ddp_divided {
    use super::*;
    pub use crate::solution::fewest_cards;
    pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
        let t = terms(setup);
        let model = |copies: u64| (copies * t.parameters + t.optimizer_state) / cards;
        match scheme {
            Scheme::Ddp => model(3) + t.activations.max(t.update_temporaries / cards),
            Scheme::DdpBucketView => {
                model(2) + (t.activations + t.largest_layer).max(t.update_temporaries / cards)
            }
            _ => crate::solution::card_bytes(setup, scheme, cards),
        }
    }
}

/// ZeRO's stages dividing the activations by the cards, as if they were sharded too.
mod activations_sharded {
    use super::*;
    pub use crate::solution::fewest_cards;
    pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
        let full = crate::solution::card_bytes(setup, scheme, cards);
        let t = terms(setup);
        match scheme {
            // The same moments with a card's activations divided by the cards.
            Scheme::Zero1 | Scheme::Zero2 | Scheme::Zero3 => {
                full.saturating_sub(t.activations - t.activations / cards)
            }
            _ => full,
        }
    }
}

/// ZeRO-3 with no layer gathered whole: no running layer, no prefetch, no buffers.
mod no_gathered_layer {
    use super::*;
    pub use crate::solution::fewest_cards;
    pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
        let t = terms(setup);
        let (p, n) = (t.parameters, cards);
        match scheme {
            Scheme::Zero3 => {
                let backward = 2 * p / n + t.optimizer_state / n + t.activations;
                let update = (2 * p + t.optimizer_state + t.update_temporaries) / n;
                backward.max(update).max(p + t.largest_layer / n)
            }
            _ => crate::solution::card_bytes(setup, scheme, cards),
        }
    }
}

#[test]
fn dividing_ddps_model_by_the_cards_fails() {
    fails_on(
        &grade(&answers_of!(ddp_divided), seed()),
        "card_bytes",
        "DDP replicates",
    );
}

#[test]
fn sharding_activations_under_zero_fails() {
    fails_on(
        &grade(&answers_of!(activations_sharded), seed()),
        "card_bytes",
        "activations are never sharded",
    );
}

#[test]
fn ignoring_zero3s_gathered_layer_fails() {
    fails_on(
        &grade(&answers_of!(no_gathered_layer), seed()),
        "card_bytes",
        "gathered whole",
    );
}
