//! Alt text for every chart: one sentence that says what the chart shows, for readers who
//! cannot see it. Pages include it from `src/generated/alt_NAME.md` (or copy it), e.g.
//! `![{{#include ../generated/alt_memory_vs_batch.md}}](../figures/memory_vs_batch.svg)`.
//! Where a chart's numbers come from a run, its alt text is built from the same run.

use crate::epochs;
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::size::format_bytes;

pub const ALT_MEMORY_VS_BATCH: &str = "Stacked area chart of the peak memory of one training \
step of the lesson's network (one hidden layer of 2000) against the batch size, on a log scale \
from 1 row to all 1 173 000 rows: parameters and gradients are too small to see, activations \
and temporaries grow in proportion to the batch with the measured peak allocated exactly on \
top of the stack, and the measured peak reserved climbs above it for the largest batches, \
reaching the card's 15.90 GiB capacity line at the largest batch that fits, well short of the \
whole training set, which as one batch lands above the line.";

pub const ALT_MEMORY_VS_WIDTH: &str = "Line chart of the peak memory of one training step at \
batch 32 with SGD against the hidden width, for 1, 3 and 5 hidden layers: with one hidden \
layer memory grows only in proportion to the width and stays near zero, while with 3 and 5 \
layers the hidden-to-hidden weights make it grow with the square of the width until it \
crosses the card's 15.90 GiB capacity line, where a marker gives the widest layers that fit.";

pub const ALT_MEMORY_VS_DEPTH: &str = "Line chart of peak allocated and peak reserved memory, \
which nearly coincide, against the number of hidden layers of width 5000 at batch 32, for SGD \
and for Adam: both rise in straight lines, Adam's about twice as steeply because it keeps two \
more values per parameter, and a marker on each shows the deepest network that still fits \
under the card's 15.90 GiB capacity line.";

pub const ALT_ALLOC_TIMELINE: &str = "Step chart of allocated and reserved memory after each \
allocator event while a network of two hidden layers of 2000 is built and trained for three \
steps at batch 262 144: allocated rises and falls inside every step as activations are created \
and freed, while reserved grows during the first step and then stays flat, below the card's \
15.90 GiB capacity line, because the caching allocator keeps the freed segments for the next \
step.";

/// The alt text of `leak_timeline.svg`, with the run's own figures.
pub fn alt_leak_timeline() -> Result<String> {
    let setup = epochs::leak_setup()?;
    let card = epochs::card(&setup)?;
    let run = &epochs::leak_runs()?.leaky;
    let failure = run
        .failure
        .as_ref()
        .ok_or_else(|| anyhow!("the leaking loop did not run out of memory"))?;
    let first = run.epochs.first().map_or(0, |e| e.reserved);
    Ok(format!(
        "Step chart of allocated and reserved memory after each of {} allocator events while \
         Challenge 3's leaking loop trains the lesson's network at batch {} on a {} card, \
         keeping every step's outputs: allocated rises and falls inside every step but ends \
         each step a little higher, so it climbs steadily from epoch to epoch, and reserved \
         steps up from {} to the card's {} as the kept outputs fill the cached segments, until \
         in epoch {} a request for one more segment fails.",
        grouped(run.trace.events.len() as u64),
        setup.batch(),
        format_bytes(card),
        format_bytes(first),
        format_bytes(card),
        failure.epoch,
    ))
}

/// Every chart's file stem and alt text, in the order the book shows them.
pub fn figures() -> Result<Vec<(&'static str, String)>> {
    Ok(vec![
        ("memory_vs_batch", ALT_MEMORY_VS_BATCH.to_string()),
        ("memory_vs_width", ALT_MEMORY_VS_WIDTH.to_string()),
        ("memory_vs_depth", ALT_MEMORY_VS_DEPTH.to_string()),
        ("alloc_timeline", ALT_ALLOC_TIMELINE.to_string()),
        ("leak_timeline", alt_leak_timeline()?),
        ("challenge4_strategies", crate::charts::strategies::alt(0)?),
        ("challenge4_deep", crate::charts::strategies::alt(1)?),
    ])
}
