//! `memory_vs_batch_log.svg`: the same step as `memory_vs_batch.svg` on a logarithmic byte
//! axis, where the model's own memory stays visible: a linear GiB axis hides that the step's
//! activations pass the model's own memory after a handful of rows, not thousands.

use crate::data::{LESSON_WIDTH, batch_sizes, equation};
use crate::style::palette::{BLUE, GREEN, YELLOW};
use crate::style::{INK, NOTE_PX, TITLE_PX, font, grouped, legend, mesh, rows_label, svg};
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::estimate::Estimate;
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use plotters::prelude::*;

/// A line of the chart: its name, its bytes in an estimate, and its colour.
type Line = (&'static str, fn(&Estimate) -> u64, RGBColor);

/// The model's own memory at the step's busiest moment: parameters, gradients, optimizer state.
pub fn model_bytes(e: &Estimate) -> u64 {
    e.parameters + e.gradients + e.optimizer_state
}

/// What the batch brings: activations and the temporaries beside them.
pub fn batch_bytes(e: &Estimate) -> u64 {
    e.activations + e.temporaries
}

/// The fewest rows at which the lesson network's activations and temporaries pass the
/// model's own memory (SGD, the lesson's width): the first grows with the batch, the second
/// does not, so the engine's monotone search finds the crossing.
pub fn crossover_rows() -> Result<u64> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let passes = |b: u64| -> Result<bool> {
        let e = equation(&config, b)?;
        Ok(batch_bytes(&e) > model_bytes(&e))
    };
    if !passes(FULL)? {
        return Err(anyhow!("activations never pass the model's own memory"));
    }
    // The last batch at which the model still outweighs the batch, plus one.
    let last_below = gpumem::search::largest_where(FULL, |b| passes(b).map(|p| !p))?;
    Ok(last_below.map_or(1, |b| b + 1))
}

/// The crossover, as the pages quote it.
pub fn crossover_inline() -> Result<String> {
    Ok(grouped(crossover_rows()?))
}

pub fn alt_memory_vs_batch_log() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let rows = crossover_rows()?;
    let one = equation(&config, 1)?;
    let full = equation(&config, FULL)?;
    for b in batch_sizes(8) {
        let e = equation(&config, b)?;
        if e.batch >= batch_bytes(&e) {
            return Err(anyhow!(
                "at {b} rows the batch is not below the activations"
            ));
        }
        // "A flat line from a few rows on": from the crossover on, the model's term does not
        // move.
        if b >= rows && model_bytes(&e) != model_bytes(&full) {
            return Err(anyhow!("at {b} rows the model's own memory is not flat"));
        }
    }
    Ok(format!(
        "Line chart, both axes logarithmic, of one training step of the lesson's network (one \
         hidden layer of {}, SGD) from 1 row to all {} rows: the model's own memory \
         (parameters, gradients, optimizer state) at the step's peak is {} for one row and a \
         flat {} from {} rows on; activations and temporaries start at {} for one row and \
         grow in proportion to the batch, passing the model's line at {} rows and reaching {} \
         for the whole set; the batch (x, y, y_pred: {} for the whole set) stays below the activations \
         at every batch.",
        grouped(LESSON_WIDTH),
        grouped(FULL),
        format_bytes(model_bytes(&one)),
        format_bytes(model_bytes(&full)),
        grouped(rows),
        format_bytes(batch_bytes(&one)),
        grouped(rows),
        format_bytes(batch_bytes(&full)),
        format_bytes(full.batch),
    ))
}

/// A byte count for a log axis' tick, whose ticks fall on powers of ten: `1 kB`, `10 MB`, …
fn byte_label(y: &f64) -> String {
    let units = [(1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    match units.iter().find(|(u, _)| *y >= *u * 0.999) {
        Some((u, name)) => format!("{:.0} {name}", y / u),
        None => format!("{y:.0} B"),
    }
}

pub fn memory_vs_batch_log() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let curve: Vec<(f64, Estimate)> = batch_sizes(8)
        .into_iter()
        .map(|b| Ok((b as f64, equation(&config, b)?)))
        .collect::<Result<_>>()?;
    let rows = crossover_rows()?;
    let at_cross = equation(&config, rows)?;
    let (x0, x1) = (1.0, 3.0e6);
    let y_max = curve
        .iter()
        .map(|(_, e)| batch_bytes(e) as f64)
        .fold(1.0, f64::max)
        * 4.0;
    let y_min = curve
        .iter()
        .map(|(_, e)| e.batch.max(1) as f64)
        .fold(f64::MAX, f64::min)
        / 4.0;
    svg(&alt_memory_vs_batch_log()?, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("The same step, log–log (hidden width {LESSON_WIDTH})"),
                font(TITLE_PX),
            )
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(96)
            .build_cartesian_2d((x0..x1).log_scale(), (y_min..y_max).log_scale())?;
        mesh(
            chart
                .configure_mesh()
                .x_desc("batch size (rows, log scale)")
                .y_desc("bytes at the step's peak (log scale)")
                .x_label_formatter(&rows_label)
                .y_label_formatter(&byte_label),
        )
        .draw()?;
        let lines: [Line; 3] = [
            ("activations + temporaries", batch_bytes, GREEN),
            (
                "parameters + gradients + optimizer state",
                model_bytes,
                BLUE,
            ),
            ("batch", |e| e.batch, YELLOW),
        ];
        for (name, bytes, color) in lines {
            chart
                .draw_series(LineSeries::new(
                    curve.iter().map(|(b, e)| (*b, bytes(e).max(1) as f64)),
                    color.stroke_width(4),
                ))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 22, y)], color.stroke_width(4))
                });
        }
        let at = (rows as f64, batch_bytes(&at_cross) as f64);
        chart.draw_series(std::iter::once(Circle::new(at, 7, INK.stroke_width(3))))?;
        chart.draw_series(std::iter::once(
            EmptyElement::at(at)
                + Text::new(
                    format!("{} rows: the batch passes the model", grouped(rows)),
                    (14, 10),
                    font(NOTE_PX).color(&INK),
                ),
        ))?;
        legend(
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft),
        )
        .draw()?;
        Ok(())
    })
}
