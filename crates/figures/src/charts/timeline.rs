//! `alloc_timeline.svg`: allocated and reserved bytes after every allocator event while a
//! network is built and trained for a few steps — the caching allocator at work.

use super::{Chart, capacity_line, note};
use crate::alts::ALT_ALLOC_TIMELINE;
use crate::data::{self, LESSON_WIDTH, network, optimizer_name};
use crate::style::palette::{BLUE, ORANGE};
use crate::style::{
    AXIS_DESC_PX, BACKGROUND, GIB, GRID, INK, LEGEND_PX, TICK_PX, TITLE_PX, font, gib, grouped, svg,
};
use anyhow::Result;
use gpumem::mlp::Optimizer;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// The traced setup: the lesson's width, two hidden layers, a batch large enough that the
/// activations dominate, three steps.
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

pub fn alloc_timeline() -> Result<String> {
    let (config, batch, steps) = timeline_setup();
    let t = data::timeline(&config, batch, steps)?;
    let x_max = t.events.len() as f64;
    let data_top = t.events.iter().map(|e| gib(e.1)).fold(0.0, f64::max);
    let y_max = (data_top.max(gib(data::card())) * 1.15).ceil();
    // Phase markers reach a little above the data, leaving room for the legend above them.
    let marker_top = data_top * 1.3;

    svg(ALT_ALLOC_TIMELINE, |root| {
        let mut chart: Chart<'_, '_, RangedCoordf64> = ChartBuilder::on(root)
            .caption(
                format!(
                    "{steps} training steps, {LAYERS} hidden layers of {}, batch {}, {}",
                    grouped(LESSON_WIDTH),
                    grouped(batch),
                    optimizer_name(&config.optimizer)
                ),
                font(TITLE_PX),
            )
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("allocator event (allocation or free), in order")
            .y_desc("device memory (GiB)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .axis_desc_style(font(AXIS_DESC_PX))
            .label_style(font(TICK_PX))
            .bold_line_style(GRID)
            .light_line_style(BACKGROUND)
            .axis_style(INK)
            .draw()?;
        capacity_line(&mut chart, 0.0, x_max, 0.0)?;
        // Phase boundaries: thin vertical lines, the phase's name beside each.
        for (start, name) in &t.phases {
            let x = *start as f64;
            chart.draw_series(std::iter::once(PathElement::new(
                [(x, 0.0), (x, marker_top)],
                INK.mix(0.35).stroke_width(1),
            )))?;
            note(&mut chart, (x, marker_top), (4, -4), name, &INK)?;
        }
        // Steps: each value holds until the next event.
        let steps_of = |pick: fn(&(u64, u64)) -> u64| {
            let mut pts = Vec::with_capacity(t.events.len() * 2 + 1);
            let mut last = 0.0;
            for (i, e) in t.events.iter().enumerate() {
                let y = gib(pick(e));
                pts.push((i as f64, last));
                pts.push((i as f64, y));
                last = y;
            }
            pts.push((x_max, last));
            pts
        };
        chart
            .draw_series(LineSeries::new(steps_of(|e| e.1), ORANGE.stroke_width(3)))?
            .label("reserved (segments held from the device)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 22, y)], ORANGE.stroke_width(3)));
        chart
            .draw_series(LineSeries::new(steps_of(|e| e.0), BLUE.stroke_width(2)))?
            .label("allocated (blocks in live tensors)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 22, y)], BLUE.stroke_width(2)));
        // The legend sits right, under the capacity line and above the data.
        let (width, height) = chart.plotting_area().dim_in_pixel();
        let legend_x = width as i32 - 400;
        let legend_y =
            ((1.0 - data::card() as f64 / (y_max * GIB)) * f64::from(height)) as i32 + 24;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::Coordinate(legend_x, legend_y))
            .label_font(font(LEGEND_PX))
            .background_style(BACKGROUND.mix(0.92))
            .border_style(GRID)
            .draw()?;
        Ok(())
    })
}
