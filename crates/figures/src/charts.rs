//! The book's charts, one module each; every function returns a finished SVG document. Each
//! chart owns its alt text (one sentence that says what it shows, for readers who cannot see
//! it); pages include it from `src/generated/alt_NAME.md`. Where a chart's numbers come from a
//! run, its alt text is built from the same run.

pub mod batch;
pub mod batch_log;
pub mod depth;
pub mod per_card;
pub mod strategies;
pub mod timeline;
pub mod width;

pub use batch::{memory_vs_batch, memory_vs_batch_reserved};
pub use batch_log::memory_vs_batch_log;
pub use depth::memory_vs_depth;
pub use timeline::{alloc_timeline, leak_timeline};
pub use width::memory_vs_width;

use ::charts::{Chart, capacity_line_in};
use anyhow::Result;
use gpumem::lesson::CARD_BYTES;
use plotters::prelude::*;

pub(crate) use ::charts::note;

/// The card's capacity as a dashed line from `x0` to `x1`, labelled at `label_x`, with a
/// legend entry.
/// Whose capacity the book's charts draw: the ideal card's (its memory all for tensors, what
/// the equation counts), the demos' default.
pub const IDEAL: &str = "the ideal card's";

fn capacity_line<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    x0: f64,
    x1: f64,
    label_x: f64,
) -> Result<()> {
    capacity_line_in(
        chart,
        (CARD_BYTES, IDEAL),
        crate::style::GIB,
        (x0, x1),
        label_x,
    )
}
