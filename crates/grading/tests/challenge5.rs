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

/// `setup.batch` read as every card's batch (a per-card batch, as a `DataLoader`'s
/// `batch_size` under `DistributedSampler` is): a card's activations do not shrink as cards
/// are added.
mod whole_batch_on_every_card {
    use super::*;
    pub use crate::solution::fewest_cards;
    pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
        // The reference sum with every card on `setup.batch` rows: a global batch that many
        // times larger.
        let every_card = Setup {
            batch: setup.batch * cards,
            ..setup
        };
        crate::solution::card_bytes(every_card, scheme, cards)
    }
}

/// ZeRO-1 dividing the optimizer state evenly over the cards, as if parameters could be cut
/// anywhere: PyTorch's `ZeroRedundancyOptimizer` hands out whole parameters.
mod zero1_even_split {
    use super::*;
    pub use crate::solution::fewest_cards;
    pub fn card_bytes(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
        let n = cards;
        let t = terms(Setup {
            batch: setup.batch.div_ceil(n),
            ..setup
        });
        let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
        match scheme {
            Scheme::Zero1 => 2 * p + state / n + t.activations.max(temps / n + t.held_in_update),
            _ => crate::solution::card_bytes(setup, scheme, cards),
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
fn every_card_on_the_whole_batch_fails() {
    fails_on(
        &grade(&answers_of!(whole_batch_on_every_card), seed()),
        "card_bytes",
        "its own rows, ⌈batch / cards⌉ of the global batch",
    );
}

#[test]
fn an_even_split_of_zero1s_state_fails() {
    fails_on(
        &grade(&answers_of!(zero1_even_split), seed()),
        "card_bytes",
        "in whole parameters, not evenly",
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
