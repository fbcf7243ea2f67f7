//! The multi-card page's quiz: what adding cards does under DDP, and what ZeRO-3 adds on top
//! of its shards. The distractors are the mistakes the page warns about.

use super::{Question, distinct};
use crate::data::DEEP_BATCH;
use crate::schemes::{cell, setup_words};
use anyhow::Result;
use gpumem::parallel::{CardMemory, Scheme};
use gpumem::size::format_bytes as bytes;

/// Parameters, gradients and optimizer state at the card's peak.
fn model_states(c: &CardMemory) -> u64 {
    c.at_peak.parameters + c.at_peak.gradients + c.at_peak.optimizer_state
}

pub fn more_than_one_card() -> Result<Vec<Question>> {
    let cards = 8;
    let one = cell(Scheme::Ddp, 1)?.fullest()?;
    let many = cell(Scheme::Ddp, cards)?.fullest()?;
    let answer = bytes(many.peak_requested);
    let ddp_q = Question {
        prompt: format!(
            "{} with Adam at {DEEP_BATCH} rows peaks at {} on one card under \
             `DistributedDataParallel`. On {cards} cards, the fullest card peaks at",
            setup_words()?,
            bytes(one.peak_requested)
        ),
        answer: answer.clone(),
        distractors: distinct(
            &answer,
            vec![
                bytes(one.peak_requested / cards as u64),
                bytes(many.peak_requested - many.at_peak.comm_buffers),
            ],
        ),
        context: format!(
            "Every card keeps the whole model, its gradients and Adam's state; only the rows \
             are split, and at {DEEP_BATCH} rows they weigh almost nothing — so not {}. DDP's buckets \
             are a second copy of the gradients ({}), so the peak is not {} either.",
            bytes(one.peak_requested / cards as u64),
            bytes(many.at_peak.comm_buffers),
            bytes(many.peak_requested - many.at_peak.comm_buffers),
        ),
    };
    let n = 4;
    let whole = cell(Scheme::Ddp, 1)?.fullest()?;
    let z3 = cell(Scheme::Zero3, n)?.fullest()?;
    let answer = bytes(z3.peak_requested);
    let shards_only = model_states(whole) / n as u64;
    let ddp_n = cell(Scheme::Ddp, n)?.fullest()?.peak_requested;
    let zero_q = Question {
        prompt: format!(
            "The same network under ZeRO-3 (`fully_shard`) on {n} cards: the model states are \
             {} on one card. The fullest card peaks at",
            bytes(model_states(whole))
        ),
        answer: answer.clone(),
        distractors: distinct(&answer, vec![bytes(shards_only), bytes(ddp_n)]),
        context: format!(
            "Each card keeps 1/{n} of the parameters, gradients and state ({}), and the step \
             needs room beside its shards: for the layers it gathers whole, their buffers, \
             the activations and the temporaries. At its peak the card holds {} of \
             parameters, {} of gradients, {} of optimizer state, {} of activations and \
             temporaries and {} of all-gather and reduce-scatter buffers: {} in all. Not \
             sharding at all, as DDP, needs {}.",
            bytes(shards_only),
            bytes(z3.at_peak.parameters),
            bytes(z3.at_peak.gradients),
            bytes(z3.at_peak.optimizer_state),
            bytes(z3.at_peak.activations),
            bytes(z3.at_peak.comm_buffers),
            bytes(z3.peak_requested),
            bytes(ddp_n),
        ),
    };
    Ok(vec![ddp_q, zero_q])
}
