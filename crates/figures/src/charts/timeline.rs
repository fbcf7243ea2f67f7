//! The book's two timelines of the allocator, drawn by the shared [`charts::timeline`]: a
//! network built and trained for a few steps (`alloc_timeline.svg`), and challenge 3's leaking
//! loop epoch by epoch (`leak_timeline.svg`).

use crate::data::{self, LESSON_WIDTH, network, optimizer_name};
use crate::epochs;
use crate::style::grouped;
use ::charts::timeline::{TimelineChart, timeline_svg};
use anyhow::{Result, anyhow};
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::Optimizer;
use gpumem::size::format_bytes;

/// The chart's alt text: what it shows, for readers who cannot see it.
pub const ALT_ALLOC_TIMELINE: &str = "Step chart of allocated and reserved memory after each \
allocator event while a network of two hidden layers of 2000 is built and trained for three \
steps at batch 262 144: allocated rises and falls inside every step as activations are created \
and freed, while reserved grows during the first step and then stays flat, below the card's \
15.90 GiB capacity line, because the caching allocator keeps the freed segments for the next \
step.";

/// The traced setup of the book's figure: the lesson's width, two hidden layers, a batch
/// large enough that the activations dominate, three steps.
pub const LAYERS: u64 = 2;
pub const BATCH: u64 = 262_144;
pub const STEPS: u32 = 3;

pub fn timeline_setup() -> (gpumem::mlp::MlpConfig, u64, u32) {
    (
        network(LESSON_WIDTH, LAYERS, Optimizer::LESSON),
        BATCH,
        STEPS,
    )
}

/// The book's `alloc_timeline.svg`.
pub fn alloc_timeline() -> Result<String> {
    let (config, batch, steps) = timeline_setup();
    let t = data::timeline(&config, batch, steps)?;
    let title = format!(
        "{steps} training steps, {LAYERS} hidden layers of {}, batch {}, {}",
        grouped(LESSON_WIDTH),
        grouped(batch),
        optimizer_name(&config.optimizer)
    );
    timeline_svg(&TimelineChart {
        trace: &t.trace,
        capacity: Some(CARD_BYTES),
        title: &title,
        alt: ALT_ALLOC_TIMELINE,
        phases: &t.phases,
    })
}

/// `leak_timeline.svg`: Challenge 3's leaking loop, epoch by epoch, on its small card.
pub fn leak_timeline() -> Result<String> {
    let setup = epochs::leak_setup()?;
    let run = &epochs::leak_runs()?.leaky;
    let title = format!(
        "A loop that keeps every step's outputs, batch {}",
        grouped(setup.batch())
    );
    timeline_svg(&TimelineChart {
        trace: &run.trace,
        capacity: Some(epochs::card(&setup)?),
        title: &title,
        alt: &alt_leak_timeline()?,
        phases: &run.phases,
    })
}

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
