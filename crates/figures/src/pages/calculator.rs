//! The in-page calculator's starting setups (`theme/calculator.js` reads them from the
//! `data-` attributes), one per page that teaches the equation or a challenge, from the same
//! constants as the page's own numbers.

use crate::data::{DEEP_BATCH, DEEP_WIDTH, LESSON_WIDTH};
use anyhow::Result;

/// What a calculator starts with.
struct Start {
    width: u64,
    layers: u64,
    /// `None`: the whole training set.
    batch: Option<u64>,
    optimizer: &'static str,
    /// On a page before Challenge 1: where a step runs out (its pass, tensor and message) is
    /// folded, as the largest batch always is.
    guess_first: bool,
}

/// Layers per checkpoint segment the form offers first: an input we choose.
const FIRST_SEGMENT: u64 = 2;

fn widget(start: Start) -> Result<String> {
    let batch = start
        .batch
        .map_or_else(|| "all".to_string(), |b| b.to_string());
    Ok(format!(
        "<div class=\"gpumem-calculator\" data-width=\"{}\" data-layers=\"{}\" \
         data-batch=\"{batch}\" data-rows=\"{}\" data-optimizer=\"{}\" data-precision=\"float32\" \
         data-accumulation=\"1\" data-checkpointing=\"off\" data-segment=\"{FIRST_SEGMENT}\"{}>\n\
         <p>The calculator runs the engine in this page: it needs JavaScript, and the book served \
         by <code>mdbook serve</code> (a page opened as a file cannot load it).</p>\n</div>\n",
        start.width,
        start.layers,
        start.batch.unwrap_or(DEEP_BATCH),
        start.optimizer,
        if start.guess_first {
            " data-guess-first=\"true\""
        } else {
            ""
        }
    ))
}

/// The lesson's network at the batch of its loop (32 rows): a step that fits. Not the whole
/// training set: whether that fits, and which tensor fails, is Challenge 1's guess, two pages
/// on (the widget keeps the largest batch folded until asked, for the same reason).
pub fn calculator_lesson() -> Result<String> {
    widget(Start {
        width: LESSON_WIDTH,
        layers: 1,
        batch: Some(DEEP_BATCH),
        optimizer: "sgd",
        guess_first: true,
    })
}

/// Challenge 2's deep network at its batch.
pub fn calculator_deep() -> Result<String> {
    widget(Start {
        width: DEEP_WIDTH,
        layers: 1,
        batch: Some(DEEP_BATCH),
        optimizer: "sgd",
        guess_first: false,
    })
}

/// Challenge 4's deeper variant of the full batch, where strategies must combine.
pub fn calculator_strategies() -> Result<String> {
    widget(Start {
        width: LESSON_WIDTH,
        layers: crate::measured::CHALLENGE4_DEEP_LAYERS,
        batch: None,
        optimizer: "sgd",
        guess_first: false,
    })
}
