//! `memory_vs_depth.svg`: peak allocated and reserved against the number of hidden layers of
//! width 5000 at batch 32, for SGD and Adam, with the deepest network that fits the card
//! (challenge 2).

use super::{IDEAL, capacity_line, note};
use crate::data::{self, DEEP_BATCH, DEEP_WIDTH, DeepestFit, optimizer_name};
use crate::style::palette::{BLUE, VERMILION};
use crate::style::{INK, TITLE_PX, font, gib, grouped, legend, mesh, svg};
use anyhow::Result;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::Optimizer;
use gpumem::size::format_bytes;
use plotters::prelude::*;

/// The chart's alt text: what it shows, for readers who cannot see it, with the slope of
/// each line and the deepest fits from the same runs as the chart.
pub fn alt_memory_vs_depth() -> Result<String> {
    let fits: Vec<DeepestFit> = [Optimizer::LESSON, data::adam()]
        .iter()
        .map(|o| data::deepest_fit(*o))
        .collect::<Result<_>>()?;
    Ok(format!(
        "Line chart of peak allocated and peak reserved memory, which nearly coincide, against \
         the number of hidden layers of width {} at batch {DEEP_BATCH}, for SGD and for Adam: \
         both rise in straight lines, Adam's about {:.1} times as steeply as SGD's because it \
         keeps two more values per parameter and, while it updates, a square root of each, and \
         a marker on each shows the deepest network that still fits under {IDEAL} {} \
         capacity line: {} hidden layers with SGD, {} with Adam.",
        grouped(DEEP_WIDTH),
        slope_ratio()?,
        format_bytes(CARD_BYTES),
        fits[0].layers,
        fits[1].layers,
    ))
}

/// How many times as steeply Adam's peak allocated climbs with depth as SGD's (measured
/// between 1 and 41 hidden layers).
pub fn slope_ratio() -> Result<f64> {
    let slope = |o: Optimizer| -> Result<f64> {
        let c = data::depth_curve(o, 41, 40)?;
        let (a, b) = (c.points[0], c.points[c.points.len() - 1]);
        Ok((b.1 - a.1) as f64 / (b.0 - a.0) as f64)
    };
    Ok(slope(data::adam())? / slope(Optimizer::LESSON)?)
}

pub fn memory_vs_depth() -> Result<String> {
    let optimizers = [(Optimizer::LESSON, BLUE), (data::adam(), VERMILION)];
    let fits: Vec<DeepestFit> = optimizers
        .iter()
        .map(|(o, _)| data::deepest_fit(*o))
        .collect::<Result<_>>()?;
    // Sweep a quarter past the deeper of the two fits.
    let max_layers = fits.iter().map(|f| f.layers).max().unwrap_or(1) * 5 / 4;
    let curves: Vec<data::DepthCurve> = optimizers
        .iter()
        .map(|(o, _)| data::depth_curve(*o, max_layers, 5))
        .collect::<Result<_>>()?;
    let top = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| gib(p.2)))
        .fold(gib(CARD_BYTES), f64::max);
    let y_max = (top * 1.05 / 5.0).ceil() * 5.0;
    let x_max = max_layers as f64 + 1.0;

    svg(&alt_memory_vs_depth()?, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!(
                    "Memory vs depth: hidden layers of {}, batch {DEEP_BATCH}",
                    grouped(DEEP_WIDTH)
                ),
                font(TITLE_PX),
            )
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        mesh(
            chart
                .configure_mesh()
                .x_desc("hidden layers")
                .y_desc("peak memory of one step (GiB)")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.0}")),
        )
        .draw()?;
        // Its label goes mid-right, between where the two lines cross it.
        capacity_line(&mut chart, 0.0, x_max, x_max * 0.52)?;
        for ((_, color), curve) in optimizers.iter().zip(&curves) {
            let color = *color;
            let name = optimizer_name(&curve.optimizer);
            let allocated = curve.points.iter().map(|p| (p.0 as f64, gib(p.1)));
            let reserved = curve.points.iter().map(|p| (p.0 as f64, gib(p.2)));
            // Reserved is a wide pale band under the allocated line: at batch 32 the two
            // nearly coincide, and a dashed line on top would vanish.
            chart
                .draw_series(LineSeries::new(reserved, color.mix(0.3).stroke_width(12)))?
                .label(format!("{name}: peak reserved"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 22, y)], color.mix(0.3).stroke_width(12))
                });
            chart
                .draw_series(LineSeries::new(allocated, color.stroke_width(3)))?
                .label(format!("{name}: peak allocated"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 22, y)], color.stroke_width(3))
                });
        }
        for ((_, color), fit) in optimizers.iter().zip(&fits) {
            let at = (fit.layers as f64, gib(fit.step.peak_reserved));
            chart.draw_series(std::iter::once(TriangleMarker::new(at, 9, color.filled())))?;
            // Each label sits below-right of its marker, under the capacity line, where each
            // line has already risen away (Adam's) or has yet to arrive (SGD's).
            let name = optimizer_name(&fit.optimizer);
            let lines = [
                (12, 8, format!("{name}: {} fit,", fit.layers)),
                (12, 30, format!("{} do not", fit.layers + 1)),
            ];
            for (dx, dy, text) in lines {
                note(&mut chart, at, (dx, dy), &text, &INK)?;
            }
        }
        legend(
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft),
        )
        .draw()?;
        Ok(())
    })
}
