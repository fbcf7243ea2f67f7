//! The per-tensor timeline, like PyTorch's "Active Memory Timeline" at pytorch.org/memory_viz:
//! every live tensor is a band, stacked in the order they were allocated, so the stack's
//! height at any moment is the bytes in live tensors and a band's thickness its own. When a
//! tensor is freed the bands above it drop by its size. Each band is named where it is wide
//! and tall enough to hold its name; the reserved bytes are a line above the stack.
//!
//! It draws a [`Timeline`] from a snapshot ([`gpumem::snapshot::Snapshot::timeline`]), ours
//! or one PyTorch wrote. By default a long trace is drawn over its newest [`MAX_STEPS`]
//! entries, the part that leads to the dump (and to an out-of-memory, if any); any window
//! and number of shapes can be asked for ([`Bounds`], laid out by [`layout()`]: bounded work
//! and output however long the trace). The SVG carries a `<metadata id="tensor-timeline">`
//! with what was drawn, for tests, and says in the chart what it summarised.

use crate::style::palette::{BLUE, GREEN, ORANGE, PURPLE, SKY, VERMILION, YELLOW};
use crate::style::{NOTE_PX, TITLE_PX, byte_unit, font, legend, mesh, svg, with_metadata};
use crate::{Chart, capacity_line_in};
use anyhow::Result;
use gpumem::snapshot::Timeline;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod layout;

pub use layout::{Bounds, COLUMNS, Layout, MAX_SHAPES, MAX_STEPS, Placed, layout, stack, window};

/// Bands drawn in colour and named; smaller ones are drawn grey and unnamed.
pub const MAX_NAMED: usize = 300;
/// A band's name: the notes' size, the smallest the book's readability check allows.
const LABEL_PX: u32 = crate::style::NOTE_PX;
/// A band is named only where it is at least this many pixels tall.
const LABEL_MIN_PX: f64 = LABEL_PX as f64;
/// Approximate width of one character of a band's name, in pixels.
const CHAR_PX: f64 = LABEL_PX as f64 * 0.48;
const COLORS: [RGBColor; 7] = [SKY, GREEN, ORANGE, PURPLE, BLUE, YELLOW, VERMILION];
const OTHER: RGBColor = RGBColor(0xc8, 0xc8, 0xc8);

/// What to draw.
#[derive(Debug, Clone, Copy)]
pub struct TensorTimelineChart<'a> {
    pub timeline: &'a Timeline,
    /// The card's capacity, drawn as a dashed line.
    pub capacity: Option<u64>,
    pub title: &'a str,
    /// The SVG's `<title>`: one sentence for readers who cannot see the chart.
    pub alt: &'a str,
}

/// The `n` largest bands, which are drawn in colour and named.
fn named(t: &Timeline, placed: &[Placed], n: usize) -> Vec<bool> {
    let mut by_size: Vec<usize> = (0..placed.len()).collect();
    by_size.sort_by_key(|&p| std::cmp::Reverse(t.bands[placed[p].band].bytes));
    let mut out = vec![false; placed.len()];
    for &p in by_size.iter().take(n) {
        out[p] = true;
    }
    out
}

/// The polygon of a placed band: its bottom edge as steps, then its top edge back.
fn polygon(p: &Placed, bytes: u64, scaled: &impl Fn(u64) -> f64) -> Vec<(f64, f64)> {
    let mut bottom = Vec::with_capacity(p.bottom.len() * 2 + 1);
    for (k, &(x, y)) in p.bottom.iter().enumerate() {
        if k > 0 {
            bottom.push((x as f64, bottom.last().map_or(0.0, |b: &(f64, f64)| b.1)));
        }
        bottom.push((x as f64, scaled(y)));
    }
    bottom.push((p.end as f64, bottom.last().map_or(0.0, |b| b.1)));
    let top: Vec<(f64, f64)> = bottom
        .iter()
        .rev()
        .map(|&(x, y)| (x, y + scaled(bytes)))
        .collect();
    bottom.into_iter().chain(top).collect()
}

/// Where to write a band's name: the middle of its longest flat stretch, if that stretch
/// is wide enough for the name.
fn label_at(p: &Placed, name: &str, px_per_step: f64) -> Option<(f64, u64)> {
    let mut best: Option<(usize, usize, u64)> = None;
    for (k, &(x, y)) in p.bottom.iter().enumerate() {
        let until = p.bottom.get(k + 1).map_or(p.end, |n| n.0);
        if best.is_none_or(|b| until - x > b.1 - b.0) {
            best = Some((x, until, y));
        }
    }
    let (from, to, y) = best?;
    let room = (to - from) as f64 * px_per_step;
    (room >= name.chars().count() as f64 * CHAR_PX + 6.0).then_some(((from + to) as f64 / 2.0, y))
}

/// Renders `chart` as an SVG document, within the default [`Bounds`].
pub fn tensor_timeline_svg(chart: &TensorTimelineChart<'_>) -> Result<String> {
    render(
        chart,
        &layout(chart.timeline, Bounds::default_for(chart.timeline)),
    )
}

/// Per column of `per` entries from `from`: the most of `values` in it, as the steps of a
/// line; every value its own step where `per` is 1.
fn column_steps(
    values: &[u64],
    from: usize,
    per: usize,
    scaled: impl Fn(u64) -> f64,
) -> Vec<(f64, f64)> {
    values
        .chunks(per.max(1))
        .enumerate()
        .flat_map(|(c, chunk)| {
            let x = (from + c * per) as f64;
            let v = scaled(chunk.iter().copied().max().unwrap_or(0));
            [(x, v), (x + per as f64, v)]
        })
        .collect()
}

/// Each coloured band's name, where the band is tall and wide enough to hold it; returns how
/// many were drawn.
fn draw_names(
    plot: &mut Chart<'_, '_, RangedCoordf64>,
    t: &Timeline,
    placed: &[Placed],
    colored: &[bool],
    scaled: &impl Fn(u64) -> f64,
    (px_per_step, px_per_unit): (f64, f64),
) -> Result<usize> {
    let mut labels = 0;
    for (k, p) in placed.iter().enumerate() {
        let band = &t.bands[p.band];
        if !colored[k] || scaled(band.bytes) * px_per_unit < LABEL_MIN_PX {
            continue;
        }
        if let Some((x, below)) = label_at(p, &band.name, px_per_step) {
            let y = scaled(below) + scaled(band.bytes) / 2.0;
            let style = font(LABEL_PX).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Center,
            ));
            plot.draw_series(std::iter::once(Text::new(band.name.clone(), (x, y), style)))?;
            labels += 1;
        }
    }
    Ok(labels)
}

/// Renders `chart` as laid out in `l` (from [`layout()`] on the same timeline).
pub fn render(chart: &TensorTimelineChart<'_>, l: &Layout) -> Result<String> {
    let t = chart.timeline;
    let (from, to) = l.window;
    let placed = &l.placed;
    let colored = named(t, placed, MAX_NAMED);
    let reserved = t.reserved.get(from..=to).unwrap_or(&[]);
    let peak_live = t
        .requested
        .get(from..=to)
        .map_or(0, |r| r.iter().copied().max().unwrap_or(0));
    let top = reserved.iter().copied().max().unwrap_or(0).max(peak_live);
    let (per_unit, unit_name) = byte_unit(top.max(chart.capacity.unwrap_or(0)));
    let scaled = |b: u64| b as f64 / per_unit;
    let y_max = match scaled(top.max(chart.capacity.unwrap_or(0))) * 1.12 {
        v if v > 0.0 => v,
        _ => 1.0,
    };
    let x_range = from as f64..(to.max(from + 1)) as f64;
    let mut labels = 0usize;
    let drawn = svg(chart.alt, |root| {
        let mut plot: Chart<'_, '_, RangedCoordf64> = ChartBuilder::on(root)
            .caption(chart.title, font(TITLE_PX))
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone(), 0.0..y_max)?;
        let decimals = if y_max < 10.0 { 1 } else { 0 };
        mesh(
            plot.configure_mesh()
                .x_desc("trace entry (allocation, free, segment), in order")
                .y_desc(format!("bytes in live tensors ({unit_name})"))
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.decimals$}")),
        )
        .draw()?;
        let (width, height) = plot.plotting_area().dim_in_pixel();
        let px_per_step = f64::from(width) / (x_range.end - x_range.start);
        let px_per_unit = f64::from(height) / y_max;
        for (k, p) in placed.iter().enumerate() {
            let bytes = t.bands[p.band].bytes;
            let color = if colored[k] {
                COLORS[p.band % COLORS.len()]
            } else {
                OTHER
            };
            plot.draw_series(std::iter::once(Polygon::new(
                polygon(p, bytes, &scaled),
                color.mix(0.85).filled(),
            )))?;
        }
        if l.summarised > 0 {
            draw_rest(&mut plot, l, &scaled, (x_range.start, x_range.end, y_max))?;
        }
        labels = draw_names(
            &mut plot,
            t,
            placed,
            &colored,
            &scaled,
            (px_per_step, px_per_unit),
        )?;
        if let Some(cap) = chart.capacity {
            // Labelled right of the legend, which sits top left.
            let label_x = x_range.start + 0.65 * (x_range.end - x_range.start);
            capacity_line_in(
                &mut plot,
                (cap, "the card's"),
                per_unit,
                (x_range.start, x_range.end),
                label_x,
            )?;
        }
        let steps = column_steps(reserved, from, l.per_column, scaled);
        plot.draw_series(LineSeries::new(steps, ORANGE.stroke_width(2)))?
            .label("reserved (segments held from the device)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 22, y)], ORANGE.stroke_width(2)));
        legend(
            plot.configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft),
        )
        .draw()?;
        Ok(())
    })?;
    // What was summarised only where something was, so that a chart drawn whole keeps
    // its metadata (and the book's figures their bytes).
    let bounded = if l.summarised > 0 || l.per_column > 1 {
        format!(
            ",\"alive\":{},\"summarised\":{},\"per_column\":{},\"peak_at\":{}",
            l.alive, l.summarised, l.per_column, l.peak.0
        )
    } else {
        String::new()
    };
    let meta = format!(
        "{{\"entries\":{},\"from\":{from},\"to\":{to},\"bands\":{},\"named\":{labels},\"peak_live\":{peak_live},\"peak_reserved\":{}{bounded}}}",
        t.steps,
        placed.len(),
        reserved.iter().copied().max().unwrap_or(0)
    );
    Ok(with_metadata(&drawn, "tensor-timeline", &meta))
}

/// The summarised bands as one grey shape on top of the drawn ones, a legend entry and a
/// note saying what was left out, and a mark at the peak (which the summary keeps exact).
fn draw_rest(
    plot: &mut Chart<'_, '_, RangedCoordf64>,
    l: &Layout,
    scaled: &impl Fn(u64) -> f64,
    (x0, x1, y_max): (f64, f64, f64),
) -> Result<()> {
    let per = l.per_column as f64;
    let mut shape: Vec<(f64, f64)> = Vec::with_capacity(l.rest.len() * 4);
    for &(x, bottom, _) in &l.rest {
        shape.push((x as f64, scaled(bottom)));
        shape.push(((x as f64 + per).min(x1), scaled(bottom)));
    }
    for &(x, _, top) in l.rest.iter().rev() {
        shape.push(((x as f64 + per).min(x1), scaled(top)));
        shape.push((x as f64, scaled(top)));
    }
    let grey = RGBColor(0x9a, 0x9a, 0x9a);
    plot.draw_series(std::iter::once(Polygon::new(shape, grey.mix(0.6).filled())))?
        .label(format!("{} more tensors, summarised", l.summarised))
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 22, y + 5)], grey.filled()));
    let (px, py) = (l.peak.0 as f64, scaled(l.peak.1));
    plot.draw_series(std::iter::once(PathElement::new(
        [(px, 0.0), (px, py)],
        VERMILION.stroke_width(1),
    )))?;
    let text = format!(
        "peak {} at entry {}",
        gpumem::size::format_bytes(l.peak.1),
        l.peak.0
    );
    // Right of the mark, or left of it near the right edge, so the text stays inside.
    let right = px > x0 + 0.6 * (x1 - x0);
    let (h, dx) = if right {
        (HPos::Right, -6)
    } else {
        (HPos::Left, 6)
    };
    let peak_style = font(NOTE_PX)
        .color(&VERMILION)
        .pos(Pos::new(h, VPos::Bottom));
    plot.draw_series(std::iter::once(
        EmptyElement::at((px, py)) + Text::new(text, (dx, -4), peak_style),
    ))?;
    let drawn = l.alive - l.summarised;
    let what = if l.per_column > 1 {
        format!(
            "{drawn} of {} tensors drawn; {} entries per column",
            l.alive, l.per_column
        )
    } else {
        format!("{drawn} of {} tensors drawn", l.alive)
    };
    // At the right, under the legend's height.
    let what_style = font(NOTE_PX).pos(Pos::new(HPos::Right, VPos::Top));
    plot.draw_series(std::iter::once(
        EmptyElement::at((x1, y_max)) + Text::new(what, (-8, 74), what_style),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumem::snapshot::Band;

    fn band(name: &str, bytes: u64, start: usize, end: Option<usize>) -> Band {
        Band {
            name: name.to_string(),
            bytes,
            addr: 0,
            start,
            end,
            frames: Default::default(),
        }
    }

    fn timeline(bands: Vec<Band>, steps: usize) -> Timeline {
        Timeline {
            bands,
            steps,
            reserved: vec![100; steps + 1],
            requested: vec![0; steps + 1],
        }
    }

    #[test]
    fn bands_above_a_freed_one_drop_by_its_size() {
        // a [0, 3), b [1, 5), c [2, ∞): when a goes at 3, b and c drop by 10.
        let t = timeline(
            vec![
                band("a", 10, 0, Some(3)),
                band("b", 20, 1, Some(5)),
                band("c", 5, 2, None),
            ],
            6,
        );
        let p = stack(&t, (0, 6));
        assert_eq!(p[0].bottom, [(0, 0)]);
        assert_eq!(p[0].end, 3);
        assert_eq!(p[1].bottom, [(1, 10), (3, 0)]);
        assert_eq!(p[2].bottom, [(2, 30), (3, 20), (5, 0)]);
        assert_eq!(p[2].end, 6, "alive at the dump");
    }

    #[test]
    fn a_window_starts_with_the_bands_alive_then() {
        let t = timeline(
            vec![band("old", 7, 0, Some(2)), band("kept", 3, 1, None)],
            10,
        );
        let p = stack(&t, (5, 10));
        assert_eq!(p.len(), 1, "the band freed before the window is left out");
        assert_eq!(p[0].bottom, [(5, 0)]);
    }

    #[test]
    fn the_svg_names_its_bands() {
        let t = timeline(
            vec![
                band("layer1.weight", 60, 0, None),
                band("z1", 30, 1, Some(4)),
            ],
            5,
        );
        let svg = tensor_timeline_svg(&TensorTimelineChart {
            timeline: &t,
            capacity: Some(200),
            title: "t",
            alt: "a",
        })
        .unwrap();
        assert!(
            svg.contains("\nlayer1.weight\n</text>") && svg.contains("\nz1\n</text>"),
            "{svg}"
        );
        assert!(svg.contains("\"bands\":2,\"named\":2"), "{svg}");
    }
}
