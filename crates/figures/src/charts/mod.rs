//! The book's charts, one module each; every function returns a finished SVG document.

pub mod batch;
pub mod depth;
pub mod timeline;
pub mod width;

pub use batch::memory_vs_batch;
pub use depth::memory_vs_depth;
pub use timeline::{alloc_timeline, leak_timeline};
pub use width::memory_vs_width;

use crate::data::card;
use crate::style::{CAPACITY, NOTE_PX, font};
use anyhow::Result;
use gpumem::size::format_bytes;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// A chart drawn on SVG with a byte axis (GiB) upwards.
type Chart<'a, 'b, X> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>;

/// The card's capacity as a dashed line from `x0` to `x1`, labelled at `label_x`, with a
/// legend entry.
fn capacity_line<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    x0: f64,
    x1: f64,
    label_x: f64,
) -> Result<()> {
    capacity_line_in(chart, card(), crate::style::GIB, (x0, x1), label_x)
}

/// A capacity of `bytes` as a dashed line from `x.0` to `x.1` on an axis in units of
/// `unit` bytes, labelled at `label_x`, with a legend entry.
fn capacity_line_in<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    bytes: u64,
    unit: f64,
    x: (f64, f64),
    label_x: f64,
) -> Result<()> {
    let y = bytes as f64 / unit;
    let style = CAPACITY.stroke_width(3);
    chart
        .draw_series(DashedLineSeries::new([(x.0, y), (x.1, y)], 12, 6, style))?
        .label(format!("the card's capacity, {}", format_bytes(bytes)))
        .legend(move |(x, y)| {
            DashedPathElement::new([(x, y), (x + 22, y)], 7, 4, CAPACITY.stroke_width(3))
        });
    chart.draw_series(std::iter::once(
        EmptyElement::at((label_x, y))
            + Text::new(
                format!("capacity {}", format_bytes(bytes)),
                (4, -24),
                font(NOTE_PX).color(&CAPACITY),
            ),
    ))?;
    Ok(())
}

/// A note in the plot at data point `at`, shifted by `offset` pixels.
fn note<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    at: (f64, f64),
    offset: (i32, i32),
    text: &str,
    color: &RGBColor,
) -> Result<()> {
    chart.draw_series(std::iter::once(
        EmptyElement::at(at) + Text::new(text.to_string(), offset, font(NOTE_PX).color(color)),
    ))?;
    Ok(())
}
