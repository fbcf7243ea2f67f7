//! The book's charts, one module each; every function returns a finished SVG document.

pub mod batch;
pub mod depth;
pub mod strategies;
pub mod timeline;
pub mod width;

pub use batch::memory_vs_batch;
pub use depth::memory_vs_depth;
pub use timeline::{alloc_timeline, leak_timeline};
pub use width::memory_vs_width;

use gpumem::lesson::{CARD_BYTES};
use ::charts::{Chart, capacity_line_in};
use anyhow::Result;
use plotters::prelude::*;

pub(crate) use ::charts::note;

/// The card's capacity as a dashed line from `x0` to `x1`, labelled at `label_x`, with a
/// legend entry.
fn capacity_line<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    x0: f64,
    x1: f64,
    label_x: f64,
) -> Result<()> {
    capacity_line_in(chart, CARD_BYTES, crate::style::GIB, (x0, x1), label_x)
}
