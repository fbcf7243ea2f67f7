//! `challenge4_strategies.svg` and `challenge4_deep.svg`: each strategy of Challenge 4's
//! demo as two bars — its planned peak at full size against the card (left), and its
//! measured time per epoch relative to the plain step's (right, one bar per backing).
//! Peaks are planned afresh; times come from the record of `figures -- --measure`.

use super::IDEAL;
use crate::measured::{self, BackendTimes, SetupTimes};
use crate::style::palette::{BLUE, GREEN, ORANGE, VERMILION};
use crate::style::{CAPACITY, INK, NOTE_PX, TICK_PX, TITLE_PX, font, gib, grouped, mesh, svg};
use anyhow::{Result, anyhow};
use gpumem::lesson::CARD_BYTES;
use gpumem::size::format_bytes;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Challenge 4's default setup, Challenge 1's full batch.
pub fn challenge4_strategies() -> Result<String> {
    chart(0)
}

/// Challenge 4's deeper setup, where checkpointing has layers to drop.
pub fn challenge4_deep() -> Result<String> {
    chart(1)
}

/// One bar of the chart: a strategy, its planned peak, and whether that fits.
struct Bar {
    label: String,
    name: String,
    peak: u64,
    fits: bool,
}

/// The demo's name, short enough for the axis: the segments are in the page's text.
fn label(name: &str) -> String {
    use demos::challenge4::strategies::{CHEAPEST_FLOAT32_PREFIX, CHEAPEST_PREFIX};
    let name = name.replace("accumulation", "accum.");
    // The demo's recommendations, starred: their full names are in the page's tables.
    let recommended = name.strip_prefix(CHEAPEST_PREFIX);
    if let Some(words) = recommended.or_else(|| name.strip_prefix(CHEAPEST_FLOAT32_PREFIX)) {
        return format!("★ {}", words.replace("checkpointing", "ckpt."));
    }
    if name.starts_with("checkpointing, segments") {
        "checkpointing".to_string()
    } else {
        name
    }
}

/// The measured time of `name` relative to the plain step's, on one backing.
fn relative(run: &BackendTimes, name: &str) -> Option<f64> {
    run.rows
        .iter()
        .find(|r| r.name == name)
        .and_then(|r| r.relative_to_none)
}

/// The setup's bars (steps of their own only) and its record.
fn bars(index: usize) -> Result<(Vec<Bar>, SetupTimes)> {
    let record = measured::load()?;
    let setup = record
        .setups
        .get(index)
        .cloned()
        .ok_or_else(|| anyhow!("no setup {index} in the record"))?;
    let bars = measured::planned_rows(setup.layers)?
        .into_iter()
        .filter(|r| measured::distinct(r, setup.layers))
        .map(|r| Bar {
            label: label(&r.name),
            name: r.name.clone(),
            peak: r.peak_allocated,
            fits: r.fits,
        })
        .collect();
    Ok((bars, setup))
}

/// The alt text of setup `index`'s chart, with its own numbers.
pub fn alt(index: usize) -> Result<String> {
    let (bars, setup) = bars(index)?;
    let none = bars.first().ok_or_else(|| anyhow!("no rows"))?;
    let fitting: Vec<&str> = bars
        .iter()
        .filter(|b| b.fits)
        .map(|b| b.label.as_str())
        .collect();
    let times: Vec<String> = setup
        .runs
        .iter()
        .map(|run| {
            let each: Vec<String> = bars
                .iter()
                .skip(1)
                .filter_map(|b| relative(run, &b.name).map(|r| format!("{} ×{r:.2}", b.label)))
                .collect();
            format!("on the {} backing {}", run.backend, each.join(", "))
        })
        .collect();
    Ok(format!(
        "Two bar charts side by side for {} hidden layer{} of 2000 and one update of the whole \
         training set. Left: each strategy's planned peak memory against {IDEAL} {} \
         capacity line; the plain step needs {} and does not fit, and these fit: {}. Right: \
         each strategy's measured time per epoch relative to the plain step's, {}.",
        setup.layers,
        if setup.layers == 1 { "" } else { "s" },
        format_bytes(CARD_BYTES),
        format_bytes(none.peak),
        fitting.join(", "),
        times.join("; ")
    ))
}

/// One of the two panels: rows stacked from 0 to `top`, no y axis labels (the left panel
/// writes the strategies' names itself), x from 0 to `x_max` with ticks as `{prefix}{x}`.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    y_label_area: u32,
    x_max: f64,
    top: f64,
    desc: &str,
    prefix: &str,
) -> Result<::charts::Chart<'a, 'b, plotters::coord::types::RangedCoordf64>> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(58)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(0.0..x_max, 0.0..top)?;
    mesh(
        chart
            .configure_mesh()
            .x_desc(desc)
            .x_labels(5)
            .y_labels(0)
            .disable_y_mesh()
            .x_label_formatter(&|x| format!("{prefix}{x:.0}")),
    )
    .draw()?;
    Ok(chart)
}

const BACKEND_COLORS: [(&str, RGBColor); 2] = [("cpu", BLUE), ("wgpu", ORANGE)];

fn chart(index: usize) -> Result<String> {
    let (bars, setup) = bars(index)?;
    let n = bars.len() as f64;
    // Row i's band is [y, y + 1) with the first row on top.
    let y = |i: usize| n - 1.0 - i as f64;
    let peak_max = bars
        .iter()
        .map(|b| gib(b.peak))
        .fold(gib(CARD_BYTES), f64::max);
    let x_peak = (peak_max * 1.25 / 10.0).ceil() * 10.0;
    let rel_max = setup
        .runs
        .iter()
        .flat_map(|run| bars.iter().filter_map(|b| relative(run, &b.name)))
        .fold(1.0, f64::max);
    // Room on the right of the longest bar for its label, `wgpu ×1.00`.
    let x_rel = (rel_max * 1.8).ceil();
    let sample = setup.runs.first().map_or(0, |r| r.sample_rows);
    let title = format!(
        "Challenge 4: {} hidden layer{} of 2 000, the whole training set",
        setup.layers,
        if setup.layers == 1 { "" } else { "s" }
    );
    svg(&alt(index)?, |root| {
        let area = root.titled(&title, font(TITLE_PX))?;
        let (left, right) = area.split_horizontally(500);
        // Half a row of headroom above the first bar for the vertical lines' labels.
        let top = n + 0.5;
        let at_end = || font(NOTE_PX).pos(Pos::new(HPos::Left, VPos::Center));

        let mut peaks = panel(&left, 236, x_peak, top, "peak of one update (GiB)", "")?;
        let capacity = gib(CARD_BYTES);
        for (i, bar) in bars.iter().enumerate() {
            let color = if bar.fits { GREEN } else { VERMILION };
            let end = gib(bar.peak);
            peaks.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y(i) + 0.2), (end, y(i) + 0.8)],
                color.filled(),
            )))?;
            let name = font(TICK_PX).pos(Pos::new(HPos::Right, VPos::Center));
            let mark = if bar.fits { "✓" } else { "✗" };
            peaks.draw_series([
                EmptyElement::at((0.0, y(i) + 0.5)) + Text::new(bar.label.clone(), (-10, 0), name),
                // Past the capacity line where the bar stops short of it, clear of the dashes.
                EmptyElement::at((end.max(capacity), y(i) + 0.5))
                    + Text::new(format!("{end:.1} {mark}"), (6, 0), at_end()),
            ])?;
        }
        peaks.draw_series(DashedLineSeries::new(
            [(capacity, 0.0), (capacity, top)],
            10,
            6,
            CAPACITY.stroke_width(3),
        ))?;
        peaks.draw_series(std::iter::once(
            EmptyElement::at((capacity, n + 0.25))
                + Text::new(
                    format!("ideal card {}", format_bytes(CARD_BYTES)),
                    (6, 0),
                    at_end().color(&CAPACITY),
                ),
        ))?;

        let desc = format!("time ÷ plain step's ({} rows)", grouped(sample));
        let mut times = panel(&right, 8, x_rel, top, &desc, "×")?;
        times.draw_series(DashedLineSeries::new(
            [(1.0, 0.0), (1.0, top)],
            6,
            4,
            INK.stroke_width(1),
        ))?;
        times.draw_series(std::iter::once(
            EmptyElement::at((1.0, n + 0.25)) + Text::new("plain step", (6, 0), at_end()),
        ))?;
        let runs: Vec<(&BackendTimes, RGBColor)> = BACKEND_COLORS
            .iter()
            .filter_map(|(name, color)| {
                let run = setup.runs.iter().find(|r| r.backend == *name)?;
                Some((run, *color))
            })
            .collect();
        // Each row's band holds one bar per backing, each labelled with its backing.
        let height = 0.7 / runs.len().max(1) as f64;
        for (j, (run, color)) in runs.iter().enumerate() {
            for (i, bar) in bars.iter().enumerate() {
                let Some(r) = relative(run, &bar.name) else {
                    continue;
                };
                let low = y(i) + 0.85 - height * (j + 1) as f64;
                times.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, low), (r, low + height)],
                    color.filled(),
                )))?;
                times.draw_series(std::iter::once(
                    EmptyElement::at((r, low + height / 2.0))
                        + Text::new(format!("{} ×{r:.2}", run.backend), (5, 0), at_end()),
                ))?;
            }
        }
        Ok(())
    })
}
