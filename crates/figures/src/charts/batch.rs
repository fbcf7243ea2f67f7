//! `memory_vs_batch.svg`: what one training step of the lesson's network needs as the batch
//! grows from one row to the whole training set (challenge 1).

use super::{capacity_line, note};
use crate::data::{self, LESSON_WIDTH, batch_sizes, equation, measure};
use crate::style::palette::{BLUE, GREEN, ORANGE, PURPLE, SKY, VERMILION, YELLOW};
use crate::style::{INK, TITLE_PX, font, gib, grouped, legend, mesh, rows_label, svg};
use ::charts::Chart;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::estimate::Estimate;
use gpumem::lesson::{CARD_BYTES, planning_unlimited};
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// The core chart's alt text (the first page: no allocator yet), with the figures of the same
/// runs as the chart. It does not name the largest batch that fits: Challenge 1, two pages
/// on, asks for it (the allocator page's chart, after the challenges, marks it).
pub fn alt_memory_vs_batch() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let full = equation(&config, FULL)?;
    Ok(format!(
        "Stacked area chart of the peak memory of one training step of the lesson's network \
         (one hidden layer of {}) against the batch size, on a log scale from 1 row to all {} \
         rows: parameters and gradients are too small to see, activations and temporaries grow \
         in proportion to the batch, with the peak the engine planned on its plan backing \
         exactly on top of the stack, which rises through the ideal card's {} capacity line; \
         the whole training set as one batch lands far above the line, at {}.",
        grouped(LESSON_WIDTH),
        grouped(FULL),
        format_bytes(CARD_BYTES),
        format_bytes(full.peak_allocated),
    ))
}

/// The allocator page's chart's alt text: the same, with the reserved line.
pub fn alt_memory_vs_batch_reserved() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let full = equation(&config, FULL)?;
    let full_reserved = measure(&planning_unlimited(), &config, FULL)?.peak_reserved;
    let largest = data::largest_batch_on_card(LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the card"))?;
    let past = measure(&planning_unlimited(), &config, largest.rows + 1)?;
    Ok(format!(
        "Stacked area chart of the peak memory of one training step of the lesson's network \
         (one hidden layer of {}) against the batch size, on a log scale from 1 row to all {} \
         rows: parameters and gradients are too small to see, activations and temporaries grow \
         in proportion to the batch with the peak allocated (planned on the plan backing) \
         exactly on top of the stack, and the peak reserved follows the stack up to the \
         largest batch that fits the ideal card's {} capacity line, {} rows ({} reserved), then \
         jumps above it ({} reserved for {} allocated one row later) as the cache fragments; \
         the whole training set as one batch lands far above the line, at {} allocated and {} \
         reserved.",
        grouped(LESSON_WIDTH),
        grouped(FULL),
        format_bytes(CARD_BYTES),
        grouped(largest.rows),
        format_bytes(largest.step.peak_reserved),
        format_bytes(past.peak_reserved),
        format_bytes(past.peak_allocated),
        format_bytes(full.peak_allocated),
        format_bytes(full_reserved),
    ))
}

/// A category's name, its bytes in an estimate, and its colour.
type Category = (&'static str, fn(&Estimate) -> u64, RGBColor);

/// How many of [`CATEGORIES`] (from the bottom) live as long as the model.
const PERSISTENT: usize = 3;

/// The categories of the memory equation, bottom of the stack first.
const CATEGORIES: [Category; 6] = [
    ("parameters", |e| e.parameters, BLUE),
    ("gradients", |e| e.gradients, SKY),
    (
        "optimizer state (none for SGD)",
        |e| e.optimizer_state,
        PURPLE,
    ),
    ("batch", |e| e.batch, YELLOW),
    ("activations", |e| e.activations, GREEN),
    ("temporaries", |e| e.temporaries, ORANGE),
];

/// The first page's chart: the equation's terms, the planned peaks and the card.
pub fn memory_vs_batch() -> Result<String> {
    chart(false)
}

/// The allocator page's chart: the same, with the peak reserved beside it.
pub fn memory_vs_batch_reserved() -> Result<String> {
    chart(true)
}

/// The chart's axes: batch size on a log scale, GiB.
type BatchChart<'a, 'b> = Chart<'a, 'b, LogCoord<f64>>;

/// What the chart draws, from the engine's runs.
struct Runs {
    /// The equation's terms at each batch size of the curve.
    curve: Vec<(u64, Estimate)>,
    /// The planned peak reserved at the same sizes, in GiB.
    reserved: Vec<(f64, f64)>,
    /// The planned peak allocated at the marked sizes.
    measured: Vec<(u64, u64)>,
    /// The whole training set as one batch: the equation, and the planned peak reserved.
    full: Estimate,
    full_reserved: u64,
    largest: Option<data::LargestBatch>,
}

impl Runs {
    fn of(config: &MlpConfig) -> Result<Runs> {
        let sizes = batch_sizes(24);
        let curve = sizes
            .iter()
            .map(|&b| Ok((b, equation(config, b)?)))
            .collect::<Result<_>>()?;
        // Reserved is measured, not predicted: the equation counts allocated bytes only.
        let reserved = sizes
            .iter()
            .map(|&b| {
                Ok((
                    b as f64,
                    gib(measure(&planning_unlimited(), config, b)?.peak_reserved),
                ))
            })
            .collect::<Result<_>>()?;
        let measured = batch_sizes(1)
            .into_iter()
            .map(|b| Ok((b, measure(&planning_unlimited(), config, b)?.peak_allocated)))
            .collect::<Result<_>>()?;
        Ok(Runs {
            curve,
            reserved,
            measured,
            full: equation(config, FULL)?,
            full_reserved: measure(&planning_unlimited(), config, FULL)?.peak_reserved,
            largest: data::largest_batch_on_card(LESSON_WIDTH)?,
        })
    }
}

fn chart(with_reserved: bool) -> Result<String> {
    let runs = Runs::of(&MlpConfig::lesson(LESSON_WIDTH))?;
    // Both variants share the reserved chart's axis, so the two read alike side by side.
    let top = runs
        .reserved
        .iter()
        .map(|p| p.1)
        .fold(gib(CARD_BYTES), f64::max);
    let alt = if with_reserved {
        alt_memory_vs_batch_reserved()?
    } else {
        alt_memory_vs_batch()?
    };
    let y_max = (top * 1.1 / 5.0).ceil() * 5.0;
    let (x0, x1) = (1.0, 3.0e6);

    svg(&alt, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("One training step vs batch size (hidden width {LESSON_WIDTH})"),
                font(TITLE_PX),
            )
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale(), 0.0..y_max)?;
        mesh(
            chart
                .configure_mesh()
                .x_desc("batch size (rows, log scale)")
                .y_desc("peak memory of one step (GiB)")
                .x_label_formatter(&rows_label)
                .y_label_formatter(&|y| format!("{y:.0}")),
        )
        .draw()?;
        draw_stack(&mut chart, &runs.curve)?;
        if with_reserved {
            draw_reserved(&mut chart, &runs.reserved)?;
        }
        draw_measured(&mut chart, &runs.measured, with_reserved)?;
        capacity_line(&mut chart, x0, x1, 1.5)?;
        draw_full(&mut chart, &runs, with_reserved)?;
        // Only after the challenges: the first page's chart would give Challenge 1's answer.
        if let Some(largest) = runs.largest.as_ref().filter(|_| with_reserved) {
            draw_largest(&mut chart, largest)?;
        }
        draw_persistent_note(&mut chart, &runs.full, (x0, y_max))?;
        draw_legend(&mut chart, y_max)
    })
}

/// Stacked: each area is the sum of its category and those below; the tallest is drawn first
/// so each smaller one covers the part below it.
fn draw_stack(chart: &mut BatchChart<'_, '_>, curve: &[(u64, Estimate)]) -> Result<()> {
    for top in (0..CATEGORIES.len()).rev() {
        let (name, _, color) = CATEGORIES[top];
        let stack = curve.iter().map(|(b, e)| {
            let bytes: u64 = CATEGORIES[..=top].iter().map(|(_, f, _)| f(e)).sum();
            (*b as f64, gib(bytes))
        });
        let area =
            chart.draw_series(AreaSeries::new(stack, 0.0, color.mix(0.9)).border_style(color))?;
        // Parameters, gradients and optimizer state are too small to see at any batch size
        // here: the note at the top says so instead of three legend entries.
        if top >= PERSISTENT {
            area.label(name).legend(move |(x, y)| {
                Rectangle::new([(x, y - 7), (x + 20, y + 7)], color.filled())
            });
        }
    }
    Ok(())
}

fn draw_reserved(chart: &mut BatchChart<'_, '_>, reserved: &[(f64, f64)]) -> Result<()> {
    chart
        .draw_series(DashedLineSeries::new(
            reserved.iter().copied(),
            7,
            4,
            INK.stroke_width(2),
        ))?
        .label("peak reserved (planned)")
        .legend(|(x, y)| DashedPathElement::new([(x, y), (x + 22, y)], 5, 3, INK.stroke_width(2)));
    Ok(())
}

fn draw_measured(
    chart: &mut BatchChart<'_, '_>,
    measured: &[(u64, u64)],
    with_reserved: bool,
) -> Result<()> {
    chart
        .draw_series(
            measured
                .iter()
                .map(|&(b, peak)| Circle::new((b as f64, gib(peak)), 5, INK.stroke_width(2))),
        )?
        .label(if with_reserved {
            "peak allocated (planned)"
        } else {
            "a planned step's peak"
        })
        .legend(|(x, y)| Circle::new((x + 10, y), 5, INK.stroke_width(2)));
    Ok(())
}

/// Challenge 1: the whole training set as one batch.
fn draw_full(chart: &mut BatchChart<'_, '_>, runs: &Runs, with_reserved: bool) -> Result<()> {
    let full_at = (FULL as f64, gib(runs.full.peak_allocated));
    chart.draw_series(std::iter::once(Cross::new(
        full_at,
        9,
        VERMILION.stroke_width(4),
    )))?;
    let mut lines = vec![format!("all {} rows at once:", grouped(FULL))];
    if with_reserved {
        lines.push(format!(
            "{} allocated,",
            format_bytes(runs.full.peak_allocated)
        ));
        lines.push(format!("{} reserved", format_bytes(runs.full_reserved)));
    } else {
        lines.push(format!(
            "{} at the peak",
            format_bytes(runs.full.peak_allocated)
        ));
    }
    for (line, text) in lines.iter().enumerate() {
        note(chart, full_at, (-205, 20 * line as i32 - 96), text, &INK)?;
    }
    Ok(())
}

/// The largest batch that fits, at its peak reserved (the allocator page's chart only).
fn draw_largest(chart: &mut BatchChart<'_, '_>, largest: &data::LargestBatch) -> Result<()> {
    let b = largest.rows;
    let at = (b as f64, gib(largest.step.peak_reserved));
    chart.draw_series(std::iter::once(TriangleMarker::new(at, 8, BLUE.filled())))?;
    note(chart, at, (-215, 8), "largest batch that fits:", &INK)?;
    note(chart, at, (-215, 28), &format!("{} rows", grouped(b)), &INK)?;
    Ok(())
}

/// At the full batch's peak (the top of the backward pass) only the output layer's gradients
/// exist: the note says so, rather than a sum that looks like "gradients double the model"
/// and is not.
fn draw_persistent_note(
    chart: &mut BatchChart<'_, '_>,
    full: &Estimate,
    top_left: (f64, f64),
) -> Result<()> {
    if full.gradients >= full.parameters {
        return Err(anyhow!("every gradient exists at the full batch's peak"));
    }
    note(
        chart,
        top_left,
        (12, 10),
        &format!(
            "parameters {}; gradients at the peak {} (the output layer's only)",
            format_bytes(full.parameters),
            format_bytes(full.gradients)
        ),
        &INK,
    )
}

/// The legend sits left, where every series is still ~0: under the capacity line when there
/// is room for it there, else above it, under the note at the top.
fn draw_legend<'a, 'b: 'a>(chart: &mut BatchChart<'a, 'b>, y_max: f64) -> Result<()> {
    let (_, height) = chart.plotting_area().dim_in_pixel();
    let capacity_y = ((1.0 - gib(CARD_BYTES) / y_max) * f64::from(height)) as i32;
    // About the legend's height: six entries and its margins.
    let legend_height = 26 * 6 + 20;
    let room_below = i64::from(height) - i64::from(capacity_y);
    let y = if room_below > legend_height + 30 {
        capacity_y + 14
    } else {
        34
    };
    legend(
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::Coordinate(14, y)),
    )
    .draw()?;
    Ok(())
}
