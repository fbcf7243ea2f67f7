//! The challenges' quizzes: predictions to make before running each demo.

use super::{LARGE_ROWS, Question, distinct};
use crate::data::{DEEP_WIDTH, LESSON_WIDTH, equation, network};
use crate::measured::CHALLENGE4_DEEP_LAYERS;
use anyhow::{Result, anyhow};
use charts::style::grouped;
use gpumem::alloc::{MIN_BLOCK, ROUND_LARGE, round_size, segment_size};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::mlp::{Checkpointing, Optimizer, Strategy};
use gpumem::size::format_bytes as bytes;
use gpumem::tensor::DType;

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
            "Challenge 1's whole batch ({} rows) through {CHALLENGE4_DEEP_LAYERS} hidden \
             layers of {} peaks at {}. With checkpointing (segments of √L layers), the peak is",
            grouped(FULL),
            grouped(LESSON_WIDTH),
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
