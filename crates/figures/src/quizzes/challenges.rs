//! The challenges' quizzes: predictions to make before running each demo.

use super::{LARGE_ROWS, Question, distinct};
use crate::data::{
    DEEP_BATCH, DEEP_WIDTH, LESSON_WIDTH, adam, deepest_fit, equation, largest_batch_on_card,
    measure, network,
};
use crate::epochs::leak_runs;
use crate::measured::CHALLENGE4_DEEP_LAYERS;
use anyhow::{Result, anyhow};
use gpumem::alloc::{MIN_BLOCK, ROUND_LARGE, round_size, segment_size};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{CARD_BYTES, planning_on_card};
use gpumem::mlp::{Checkpointing, MlpConfig, Optimizer, Pass, Strategy};
use gpumem::size::format_bytes as bytes;
use gpumem::tensor::DType;

/// The largest batch on the card, and which tensor fails first with the whole set.
pub fn challenge_1() -> Result<Vec<Question>> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let largest = largest_batch_on_card(LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the card"))?;
    let whole = equation(&config, FULL)?;
    // Scaling the whole set's peak down to the card ignores the model's fixed memory.
    let scaled = (CARD_BYTES as u128 * FULL as u128 / whole.peak_allocated as u128) as u64;
    let rows = largest.rows.to_string();
    let batch_q = Question {
        prompt: format!(
            "The lesson's network on the {} card: the largest batch whose step fits is",
            bytes(CARD_BYTES)
        ),
        answer: rows.clone(),
        distractors: distinct(&rows, vec![FULL.to_string(), scaled.to_string()]),
        context: format!(
            "Planned step by step by the engine on the card, {} rows fit and one more does not. All {FULL} \
             rows need {}. Scaling that down in proportion ({scaled} rows) forgets that the \
             model's own memory and the allocator's rounding do not shrink with the batch.",
            largest.rows,
            bytes(whole.peak_allocated)
        ),
    };
    let full = measure(&planning_on_card(), &config, FULL)?;
    let oom = full
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card"))?;
    let others: Vec<String> = [
        deepest_fit(Optimizer::LESSON)?.oom.label,
        deepest_fit(adam())?.oom.label,
    ]
    .into_iter()
    .chain(
        leak_runs()?
            .leaky
            .failure
            .as_ref()
            .map(|f| f.oom.label.clone()),
    )
    .map(|l| format!("`{l}`"))
    .collect();
    let label = format!("`{}`", oom.label);
    let tensor_q = Question {
        prompt: "All the rows as one batch on that card: which tensor's allocation fails first?"
            .to_string(),
        answer: label.clone(),
        distractors: distinct(&label, others),
        context: format!(
            "The step fails in the {}, asking for {} with {} already allocated: the first \
             tensor whose size grows with the whole batch and no longer fits beside the rest.",
            full.failed_in.map_or("step".to_string(), |p| p.to_string()),
            bytes(oom.requested),
            bytes(oom.allocated)
        ),
    };
    Ok(vec![batch_q, tensor_q])
}

/// How deep with Adam, and where its step runs out.
pub fn challenge_2() -> Result<Vec<Question>> {
    let sgd = deepest_fit(Optimizer::LESSON)?;
    let adam = deepest_fit(adam())?;
    let momentum = deepest_fit(Optimizer::Sgd {
        lr: 0.001,
        momentum: 0.9,
    })?;
    let depth_q = Question {
        prompt: format!(
            "Hidden layers of {DEEP_WIDTH}, batch {DEEP_BATCH}, on the {} card: with SGD the \
             deepest network that fits has {} hidden layers. With Adam?",
            bytes(CARD_BYTES),
            sgd.layers
        ),
        answer: adam.layers.to_string(),
        distractors: distinct(
            &adam.layers.to_string(),
            vec![sgd.layers.to_string(), momentum.layers.to_string()],
        ),
        context: format!(
            "Each layer brings its weights, its gradients and Adam's two averages: four \
             copies where SGD has two, so about half as many layers fit ({}). Adam counted as \
             one copy gives {} (SGD with momentum); {} ignores the optimizer.",
            adam.layers, momentum.layers, sgd.layers
        ),
    };
    let pass = |p: Pass| match p {
        Pass::Model => "while building the model".to_string(),
        p => format!("in the {p}"),
    };
    let answer = pass(adam.failed_in);
    let pass_q = Question {
        prompt: format!(
            "With Adam and {} hidden layers (one too many), where does it run out?",
            adam.layers + 1
        ),
        answer: answer.clone(),
        distractors: distinct(
            &answer,
            [Pass::Model, Pass::Forward, Pass::Backward, Pass::Optimizer]
                .into_iter()
                .map(pass)
                .collect(),
        ),
        context: format!(
            "It fails {answer}, allocating `{}` ({}). With SGD, one layer too many fails {}.",
            adam.oom.label,
            bytes(adam.oom.requested),
            pass(sgd.failed_in)
        ),
    };
    Ok(vec![depth_q, pass_q])
}

/// The allocator's rounding of one large activation: what allocated and reserved grow by.
pub fn challenge_3() -> Result<Vec<Question>> {
    let requested = LARGE_ROWS * DEEP_WIDTH * DType::F32.size();
    let rounded = round_size(requested).ok_or_else(|| anyhow!("{requested} B too large"))?;
    let segment = segment_size(rounded).ok_or_else(|| anyhow!("{rounded} B too large"))?;
    let what = format!(
        "One float32 activation of {LARGE_ROWS} rows × {DEEP_WIDTH} ({}) is allocated on an \
         empty cache.",
        bytes(requested)
    );
    let allocated_q = Question {
        prompt: format!("{what} How much does `memory_allocated()` grow?"),
        answer: bytes(rounded),
        distractors: distinct(&bytes(rounded), vec![bytes(segment), bytes(requested)]),
        context: format!(
            "Allocated counts the block looked for, {} (the request rounded up to a multiple \
             of {MIN_BLOCK} B), not the {} segment cut for it.",
            bytes(rounded),
            bytes(segment)
        ),
    };
    let reserved_q = Question {
        prompt: format!("{what} How much does `memory_reserved()` grow?"),
        answer: bytes(segment),
        distractors: distinct(&bytes(segment), vec![bytes(rounded), bytes(requested)]),
        context: format!(
            "A request this large gets its own segment, rounded up to a multiple of {}: \
             {}. The rest of the segment stays reserved, free for a later block.",
            bytes(ROUND_LARGE),
            bytes(segment)
        ),
    };
    Ok(vec![allocated_q, reserved_q])
}

/// Checkpointing the deep network: what it saves and what it costs.
pub fn challenge_4() -> Result<Vec<Question>> {
    let base = network(LESSON_WIDTH, CHALLENGE4_DEEP_LAYERS, Optimizer::LESSON);
    let plain = equation(&base, FULL)?;
    let checkpointed = equation(
        &base.with_strategy(Strategy {
            checkpointing: Checkpointing::Sqrt,
            ..Strategy::default()
        }),
        FULL,
    )?;
    let no_activations = plain.peak_allocated - plain.activations;
    let peak_q = Question {
        prompt: format!(
            "Challenge 1's whole batch ({FULL} rows) through {CHALLENGE4_DEEP_LAYERS} hidden \
             layers of {LESSON_WIDTH} peaks at {}. With checkpointing (segments of √L layers), the peak is",
            bytes(plain.peak_allocated)
        ),
        answer: bytes(checkpointed.peak_allocated),
        distractors: distinct(
            &bytes(checkpointed.peak_allocated),
            vec![bytes(no_activations), bytes(plain.peak_allocated)],
        ),
        context: format!(
            "Checkpointing drops only activations inside a segment: activations {} → {}. \
             The parameters, gradients and the rest stay, so it cannot reach {} (no \
             activations at all).",
            bytes(plain.activations),
            bytes(checkpointed.activations),
            bytes(no_activations)
        ),
    };
    let recomputed = checkpointed.recomputed_layers.to_string();
    let cost_q = Question {
        prompt: "And what does it cost per step?".to_string(),
        answer: format!("{recomputed} hidden layers computed a second time"),
        distractors: distinct(
            &format!("{recomputed} hidden layers computed a second time"),
            vec![
                "Nothing: the dropped activations are never needed".to_string(),
                format!("All {CHALLENGE4_DEEP_LAYERS} hidden layers computed a second time"),
            ],
        ),
        context: format!(
            "The backward pass needs every activation, so each segment is run forward again \
             from its kept input: {recomputed} of the {CHALLENGE4_DEEP_LAYERS} hidden layers \
             are recomputed, time traded for memory."
        ),
    };
    Ok(vec![peak_q, cost_q])
}
