//! `memory_vs_depth.svg`: peak allocated and reserved against the number of hidden layers of
//! width 5000 at batch 32, for SGD and Adam, up to a depth that still fits the card with both:
//! Challenge 2, on the next page, asks how deep each can go, so the chart stops short of it.

use super::{IDEAL, capacity_line};
use crate::data::{self, DEEP_BATCH, DEEP_WIDTH, optimizer_name};
use crate::style::palette::{BLUE, VERMILION};
use crate::style::{TITLE_PX, font, gib, grouped, legend, mesh, svg};
use anyhow::Result;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::Optimizer;
use gpumem::size::format_bytes;
use plotters::prelude::*;

/// The deepest network the chart shows: an input we choose, short of both answers of
/// Challenge 2 (checked: [`shown_curves`] fails when it is not).
pub const SHOWN_LAYERS: u64 = 20;

/// Every 1st depth up to [`SHOWN_LAYERS`], for SGD and Adam, once both are known to fit
/// deeper than that.
fn shown_curves() -> Result<Vec<data::DepthCurve>> {
    [Optimizer::LESSON, data::adam()]
        .iter()
        .map(|o| {
            let fit = data::deepest_fit(*o)?;
            if fit.layers <= SHOWN_LAYERS {
                anyhow::bail!(
                    "{} fits only {} hidden layers: the depth chart, up to {SHOWN_LAYERS}, \
                     would show Challenge 2's answer",
                    optimizer_name(o),
                    fit.layers
                );
            }
            data::depth_curve(*o, SHOWN_LAYERS, 1)
        })
        .collect()
}

/// The chart's alt text: what it shows, for readers who cannot see it, with the slope of
/// each line and where each ends, from the same runs as the chart.
pub fn alt_memory_vs_depth() -> Result<String> {
    let ends: Vec<u64> = shown_curves()?
        .iter()
        .map(|c| c.points.last().map_or(0, |p| p.1))
        .collect();
    Ok(format!(
        "Line chart of peak allocated and peak reserved memory, which nearly coincide, against \
         the number of hidden layers of width {} at batch {DEEP_BATCH}, from 1 to \
         {SHOWN_LAYERS}, for SGD and for Adam: both rise in straight lines, Adam's about {:.1} \
         times as steeply as SGD's because it keeps two more values per parameter and, while \
         it updates, a square root of each. At {SHOWN_LAYERS} hidden layers SGD peaks at {} \
         and Adam at {}, both still under {IDEAL} {} capacity line drawn above them.",
        grouped(DEEP_WIDTH),
        slope_ratio()?,
        format_bytes(ends[0]),
        format_bytes(ends[1]),
        format_bytes(CARD_BYTES),
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
    let colors = [BLUE, VERMILION];
    let curves = shown_curves()?;
    let top = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| gib(p.2)))
        .fold(gib(CARD_BYTES), f64::max);
    let y_max = (top * 1.05 / 5.0).ceil() * 5.0;
    let x_max = SHOWN_LAYERS as f64 + 1.0;

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
        // Its label goes mid-right, above where both lines end.
        capacity_line(&mut chart, 0.0, x_max, x_max * 0.52)?;
        for (color, curve) in colors.iter().zip(&curves) {
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
        // Under the capacity line, left, where both lines are still low.
        let (_, height) = chart.plotting_area().dim_in_pixel();
        let capacity_y = ((1.0 - gib(CARD_BYTES) / y_max) * f64::from(height)) as i32;
        legend(
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::Coordinate(14, capacity_y + 14)),
        )
        .draw()?;
        Ok(())
    })
}
