//! Challenge 5's quiz: predictions to make before running its demo. The distractors are the
//! mistakes its grader's proofs make: ZeRO-1's state divided evenly instead of in whole
//! parameters, and a scheme that shards state when there is none.

use super::{Question, distinct};
use crate::data::{DEEP_BATCH, DEEP_WIDTH, deepest_fit, network};
use crate::schemes::{cell, setup_words};
use anyhow::{Context, Result};
use gpumem::lesson::planning_on_card;
use gpumem::mlp::{MlpConfig, Optimizer};
use gpumem::parallel::{Scheme, fewest_cards};
use gpumem::size::format_bytes as bytes;
use grading::challenge5::{largest_share, terms};
use grading::{Opt, Setup};

/// The most cards the quiz's searches try (the demo's default `--max-cards`).
const MOST_CARDS: usize = 8;

pub fn challenge_5() -> Result<Vec<Question>> {
    Ok(vec![zero1_question()?, sgd_question()?])
}

/// The exercise's `Setup` for one of the figures' networks.
fn setup_of(config: &MlpConfig, batch: u64) -> Setup {
    Setup {
        inputs: config.inputs,
        width: config.hidden,
        layers: config.layers,
        classes: config.classes,
        batch,
        optimizer: match config.optimizer {
            Optimizer::Adam { .. } => Opt::Adam,
            _ => Opt::Sgd,
        },
    }
}

/// The fullest card's peak of requested bytes under `scheme` on `cards` cards: what
/// `card_bytes` answers.
fn fullest_requested(scheme: Scheme, cards: usize) -> Result<u64> {
    let c = cell(scheme, cards)?;
    Ok(c.wants
        .cards
        .iter()
        .map(|c| c.peak_requested)
        .max()
        .unwrap_or(0))
}

/// ZeRO-1 on the most cards: whole parameters, not an even split.
fn zero1_question() -> Result<Question> {
    let n = MOST_CARDS;
    let config = crate::schemes::setup()?;
    let rows = DEEP_BATCH.div_ceil(n as u64);
    let t = terms(setup_of(&config, rows));
    let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
    let even = 2 * p + state / n as u64 + t.activations.max(temps / n as u64 + t.held_in_update);
    let all_divided = (2 * p + state) / n as u64 + t.activations;
    let answer = bytes(fullest_requested(Scheme::Zero1, n)?);
    let ddp = fullest_requested(Scheme::DdpBucketView, n)?;
    let share = largest_share(setup_of(&config, DEEP_BATCH), n as u64);
    let zero1 = cell(Scheme::Zero1, n)?;
    Ok(Question {
        prompt: format!(
            "{} with Adam and a global batch of {DEEP_BATCH} rows, under ZeRO-1 \
             (`ZeroRedundancyOptimizer` over DDP with bucket views) on {n} cards: the fullest \
             card's peak, in bytes its tensors ask for (what `card_bytes` answers), is",
            setup_words()?
        ),
        answer: answer.clone(),
        distractors: distinct(&answer, vec![bytes(even), bytes(all_divided), bytes(ddp)]),
        context: format!(
            "ZeRO-1 divides only Adam's state and update; parameters and gradients stay whole \
             ({} each). PyTorch hands out whole parameters, largest first, so the fullest card \
             updates {} of them, not 1/{n} ({}): {answer}, not {} (an even split). Dividing \
             the parameters and gradients too gives {}; dividing nothing, DDP with bucket \
             views, {}. The demo shows the same card with the allocator's rounding: {} \
             allocated, {} reserved.",
            bytes(p),
            bytes(share),
            bytes(p / n as u64),
            bytes(even),
            bytes(all_divided),
            bytes(ddp),
            bytes(zero1.wants.peak_allocated()),
            bytes(zero1.wants.peak_reserved()),
        ),
    })
}

/// `2 cards` or `none of 1 to 8`.
fn cards_words(n: Option<usize>) -> String {
    match n {
        Some(1) => "1 card".to_string(),
        Some(n) => format!("{n} cards"),
        None => format!("none of 1 to {MOST_CARDS}"),
    }
}

/// ZeRO-1 with SGD: no state to shard.
fn sgd_question() -> Result<Question> {
    let sgd = deepest_fit(Optimizer::LESSON)?;
    let config = network(DEEP_WIDTH, sgd.layers + 1, Optimizer::LESSON);
    let fewest = |scheme| {
        fewest_cards(&planning_on_card(), &config, scheme, DEEP_BATCH, MOST_CARDS)
            .with_context(|| format!("the fewest cards for {scheme}"))
    };
    let zero1 = fewest(Scheme::Zero1)?;
    let zero3 = fewest(Scheme::Zero3)?;
    let with_adam = fewest_cards(
        &planning_on_card(),
        &crate::schemes::setup()?,
        Scheme::Zero1,
        DEEP_BATCH,
        MOST_CARDS,
    )?;
    let answer = cards_words(zero1);
    Ok(Question {
        prompt: format!(
            "Challenge 2's network with SGD, one layer deeper than the {} hidden layers of {} \
             that fit one card, a global batch of {DEEP_BATCH} rows: the fewest cards on which \
             it trains under ZeRO-1 is",
            sgd.layers,
            crate::style::grouped(DEEP_WIDTH),
        ),
        answer: answer.clone(),
        distractors: distinct(
            &answer,
            vec![
                cards_words(zero3),
                cards_words(with_adam),
                cards_words(Some(MOST_CARDS)),
            ],
        ),
        context: format!(
            "SGD keeps no optimizer state, and ZeRO-1 shards nothing else: every card holds \
             what DDP with bucket views holds, so it needs {answer}. ZeRO-3 (FSDP) shards the \
             parameters and gradients and needs {}. With Adam, on the same page's network, \
             ZeRO-1 has state to shard and needs {}.",
            cards_words(zero3),
            cards_words(with_adam),
        ),
    })
}
