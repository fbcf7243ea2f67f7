//! Chart rendering that more than one crate needs: one look for every chart ([`style`]) and
//! the allocator's timeline ([`timeline`]), drawn by plotters into SVG documents.
//!
//! The book's figures (`crates/figures`) draw every chart with this style, and the timeline
//! serves both the book and any run that records a trace (challenge 3's demo). What a chart
//! shows — which run, which title — is up to its caller; this crate only draws.

pub mod per_card;
pub mod style;
pub mod tensor_timeline;
pub mod timeline;

pub use per_card::{PerCardChart, per_card_svg};
pub use tensor_timeline::{TensorTimelineChart, tensor_timeline_svg};
pub use timeline::{TimelineChart, timeline_svg};

use anyhow::Result;
use gpumem::size::format_bytes;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use style::{CAPACITY, NOTE_PX, font};

/// A chart drawn on SVG with a byte axis upwards.
pub type Chart<'a, 'b, X> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>;

/// A capacity of `bytes` as a dashed line from `x.0` to `x.1` on an axis in units of
/// `unit` bytes, labelled at `label_x`, with a legend entry that says whose (`"the ideal
/// card's"`: every number says which card it is for).
pub fn capacity_line_in<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    (bytes, whose): (u64, &str),
    unit: f64,
    x: (f64, f64),
    label_x: f64,
) -> Result<()> {
    let y = bytes as f64 / unit;
    let style = CAPACITY.stroke_width(3);
    chart
        .draw_series(DashedLineSeries::new([(x.0, y), (x.1, y)], 12, 6, style))?
        .label(format!("{whose} capacity, {}", format_bytes(bytes)))
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
pub fn note<X: Ranged<ValueType = f64>>(
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
