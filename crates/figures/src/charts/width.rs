//! `memory_vs_width.svg`: peak memory against hidden width for 1, 3 and 5 hidden layers at
//! batch 32 — the hidden-to-hidden weights grow with the square of the width.

use super::{IDEAL, capacity_line, note};
use crate::data::{self, equation, measure, network};
use crate::style::palette::{BLUE, ORANGE, VERMILION};
use crate::style::{INK, TITLE_PX, font, gib, grouped, legend, mesh, svg};
use anyhow::Result;
use gpumem::lesson::{CARD_BYTES, planning_unlimited};
use gpumem::mlp::Optimizer;
use plotters::prelude::*;

/// The chart's alt text: what it shows, for readers who cannot see it.
pub fn alt_memory_vs_width() -> String {
    format!(
        "Line chart of the peak memory of one training step at batch {BATCH} with SGD against \
         the hidden width, for 1, 3 and 5 hidden layers: with one hidden layer memory grows \
         only in proportion to the width and stays near zero, while with 3 and 5 layers the \
         hidden-to-hidden weights make it grow with the square of the width until it crosses \
         {IDEAL} {} capacity line, where a marker gives the widest layers that fit.",
        gpumem::size::format_bytes(CARD_BYTES)
    )
}

/// The batch of every point.
pub const BATCH: u64 = 32;
/// The widths swept.
pub const MAX_WIDTH: u64 = 35_000;
/// The depths compared, and their colours.
pub const DEPTHS: [(u64, RGBColor); 3] = [(1, BLUE), (3, ORANGE), (5, VERMILION)];

pub fn memory_vs_width() -> Result<String> {
    let widths: Vec<u64> = std::iter::once(100)
        .chain((1..=MAX_WIDTH / 250).map(|i| i * 250))
        .collect();
    let mut lines = Vec::new();
    for (layers, color) in DEPTHS {
        let line: Vec<(f64, f64)> = widths
            .iter()
            .map(|&w| {
                let e = equation(&network(w, layers, Optimizer::LESSON), BATCH)?;
                Ok((w as f64, gib(e.peak_allocated)))
            })
            .collect::<Result<_>>()?;
        let measured: Vec<(f64, f64)> = (1..=MAX_WIDTH / 5000)
            .map(|i| {
                let w = i * 5000;
                let m = measure(
                    &planning_unlimited(),
                    &network(w, layers, Optimizer::LESSON),
                    BATCH,
                )?;
                Ok((w as f64, gib(m.peak_allocated)))
            })
            .collect::<Result<_>>()?;
        let widest = data::widest_on_card(layers, BATCH)?.filter(|&w| w <= MAX_WIDTH);
        lines.push((layers, color, line, measured, widest));
    }
    let top = lines
        .iter()
        .flat_map(|l| l.2.iter().map(|p| p.1))
        .fold(gib(CARD_BYTES), f64::max);
    let y_max = (top * 1.08 / 5.0).ceil() * 5.0;
    let x_max = MAX_WIDTH as f64;

    svg(&alt_memory_vs_width(), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Memory vs hidden width, batch {BATCH}, SGD"),
                font(TITLE_PX),
            )
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max * 1.02, 0.0..y_max)?;
        mesh(
            chart
                .configure_mesh()
                .x_desc("width of every hidden layer (neurons)")
                .y_desc("peak allocated (GiB)")
                .x_label_formatter(&|x| grouped(x.round() as u64))
                .y_label_formatter(&|y| format!("{y:.0}")),
        )
        .draw()?;
        capacity_line(&mut chart, 0.0, x_max * 1.02, 300.0)?;
        for (layers, color, line, measured, widest) in &lines {
            let color = *color;
            let name = match layers {
                1 => "1 hidden layer".to_string(),
                n => format!("{n} hidden layers"),
            };
            chart
                .draw_series(LineSeries::new(line.iter().copied(), color.stroke_width(3)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 22, y)], color.stroke_width(3))
                });
            chart.draw_series(
                measured
                    .iter()
                    .map(|&p| Circle::new(p, 5, INK.stroke_width(2))),
            )?;
            if let Some(w) = widest {
                let e = equation(&network(*w, *layers, Optimizer::LESSON), BATCH)?;
                let at = (*w as f64, gib(e.peak_allocated));
                chart.draw_series(std::iter::once(TriangleMarker::new(at, 9, color.filled())))?;
                note(&mut chart, at, (8, 6), &grouped(*w), &INK)?;
            }
        }
        // One legend entry each for the markers every line has.
        chart
            .draw_series(std::iter::empty::<TriangleMarker<(f64, f64), i32>>())?
            .label("widest that fits on the card")
            .legend(|(x, y)| TriangleMarker::new((x + 11, y), 9, INK.filled()));
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label("measured peak (one step on plan)")
            .legend(|(x, y)| Circle::new((x + 11, y), 5, INK.stroke_width(2)));
        legend(
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft),
        )
        .draw()?;
        Ok(())
    })
}
