//! The book's two timelines of the allocator, drawn by the shared [`charts::timeline`]: a
//! network built and trained for a few steps (`alloc_timeline.svg`), and challenge 3's leaking
//! loop epoch by epoch (`leak_timeline.svg`).

use gpumem::lesson::{CARD_BYTES};
use crate::alts::{ALT_ALLOC_TIMELINE, alt_leak_timeline};
use crate::data::{self, LESSON_WIDTH, network, optimizer_name};
use crate::epochs;
use crate::style::grouped;
use ::charts::timeline::{TimelineChart, timeline_svg};
use anyhow::Result;
use gpumem::mlp::Optimizer;

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
