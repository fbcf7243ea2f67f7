//! Timelines of the allocator: allocated and reserved bytes after every event of a recorded
//! [`Trace`], with the card's capacity — PyTorch's memory timeline, drawn by plotters.
//!
//! One implementation serves the book's timelines (`crates/figures`) and any run that records
//! a trace (challenge 3's demo): [`timeline_svg`]. Long traces are thinned to at most
//! [`MAX_BUCKETS`] buckets, each keeping the events where a series is at its lowest and
//! highest, so every peak of the run is still drawn exactly. The SVG carries a `<metadata>`
//! element with what was plotted (event and point counts, each series' extremes), so a test
//! can check the drawing against the trace without reading pixels.

use crate::style::palette::{BLUE, ORANGE};
use crate::style::{INK, TITLE_PX, byte_unit, font, legend, mesh, svg, with_metadata};
use crate::{Chart, capacity_line_in, note};
use anyhow::Result;
use gpumem::alloc::Trace;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Traces longer than this many buckets are thinned (an 800-pixel chart cannot show more).
pub const MAX_BUCKETS: usize = 1000;

/// The colour of the reserved series (and of its `<polyline>` in the SVG).
pub const RESERVED_COLOR: RGBColor = ORANGE;
/// The colour of the allocated series.
pub const ALLOCATED_COLOR: RGBColor = BLUE;

/// What to draw: a trace, the card it ran on, and words for the reader.
#[derive(Debug, Clone, Copy)]
pub struct TimelineChart<'a> {
    pub trace: &'a Trace,
    /// The card's capacity, drawn as a dashed line (none on a `native` device).
    pub capacity: Option<u64>,
    pub title: &'a str,
    /// The SVG's `<title>`: one sentence for readers who cannot see the chart.
    pub alt: &'a str,
    /// Where each phase (a step, an epoch) starts, as an index into the trace's events, and
    /// its name; drawn as thin vertical lines.
    pub phases: &'a [(usize, String)],
}

/// One plotted point: the event's index in the trace and the totals right after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub event: usize,
    pub allocated: u64,
    pub reserved: u64,
}

/// The points drawn for `trace`: every event when there are at most `2 × max_buckets`,
/// else for each of `max_buckets` runs of consecutive events the ones where allocated or
/// reserved is lowest or highest, in order — the extremes of the whole trace survive.
pub fn points(trace: &Trace, max_buckets: usize) -> Vec<Point> {
    let all = trace.events.iter().enumerate().map(|(i, e)| Point {
        event: i,
        allocated: e.allocated,
        reserved: e.reserved,
    });
    let n = trace.events.len();
    if n <= 2 * max_buckets.max(1) {
        return all.collect();
    }
    let all: Vec<Point> = all.collect();
    let per = n.div_ceil(max_buckets.max(1));
    let mut out = Vec::new();
    for bucket in all.chunks(per) {
        let pick = |key: fn(&Point) -> u64, max: bool| {
            let it = bucket.iter();
            if max {
                it.max_by_key(|p| (key(p), std::cmp::Reverse(p.event)))
            } else {
                it.min_by_key(|p| (key(p), p.event))
            }
        };
        let mut chosen: Vec<Point> = [
            pick(|p| p.allocated, false),
            pick(|p| p.allocated, true),
            pick(|p| p.reserved, false),
            pick(|p| p.reserved, true),
        ]
        .into_iter()
        .flatten()
        .copied()
        .collect();
        chosen.sort_by_key(|p| p.event);
        chosen.dedup();
        out.extend(chosen);
    }
    out
}

/// A phase's name is drawn only with this many pixels before the next phase starts.
const PHASE_LABEL_PX: f64 = 80.0;

/// The legend's box, in pixels (three entries at [`LEGEND_PX`]).
const LEGEND_SIZE_PX: (i32, i32) = (400, 100);

/// Whether no line of the step chart passes through `values` (low, high, in the chart's
/// unit) over the events `events` (from, to). Each point's values hold until the next point,
/// and the vertical step into a point spans its values and the previous point's, so a point
/// counts as occupying everything between the four.
fn clear_of(
    pts: &[Point],
    events: (f64, f64),
    values: (f64, f64),
    scaled: impl Fn(u64) -> f64,
) -> bool {
    let first = pts
        .iter()
        .rposition(|p| p.event as f64 <= events.0)
        .unwrap_or(0);
    let last = pts
        .iter()
        .rposition(|p| p.event as f64 <= events.1)
        .unwrap_or(0);
    (first..=last).filter(|&i| i < pts.len()).all(|i| {
        let p = &pts[i];
        let prev = if i > first { pts[i - 1] } else { *p };
        let all = [p.allocated, p.reserved, prev.allocated, prev.reserved];
        let low = scaled(all.into_iter().min().unwrap_or(0));
        let high = scaled(all.into_iter().max().unwrap_or(0));
        high < values.0 || low > values.1
    })
}

/// Phase boundaries: thin vertical lines, the phase's name beside each. A name is left out
/// when the next phase starts too close for it (a model built in a handful of events before
/// the first epoch); its line stays.
fn draw_phases(
    plot: &mut Chart<'_, '_, RangedCoordf64>,
    phases: &[(usize, String)],
    events_per_px: f64,
    marker_top: f64,
) -> Result<()> {
    for (i, (start, name)) in phases.iter().enumerate() {
        let x = *start as f64;
        plot.draw_series(std::iter::once(PathElement::new(
            [(x, 0.0), (x, marker_top)],
            INK.mix(0.35).stroke_width(1),
        )))?;
        let room = phases
            .get(i + 1)
            .map_or(f64::INFINITY, |next| (next.0 as f64 - x) / events_per_px);
        if room >= PHASE_LABEL_PX {
            note(plot, (x, marker_top), (4, -4), name, &INK)?;
        }
    }
    Ok(())
}

/// Renders `chart` as an SVG document.
pub fn timeline_svg(chart: &TimelineChart<'_>) -> Result<String> {
    let pts = points(chart.trace, MAX_BUCKETS);
    let n_events = chart.trace.events.len();
    let x_max = n_events.max(1) as f64;
    let top_bytes = chart.trace.peak_reserved().max(chart.capacity.unwrap_or(0));
    let (per_unit, unit_name) = byte_unit(top_bytes);
    let scaled = |b: u64| b as f64 / per_unit;
    let data_top = pts.iter().map(|p| scaled(p.reserved)).fold(0.0, f64::max);
    let y_max = (data_top.max(chart.capacity.map_or(0.0, scaled)) * 1.15)
        .ceil()
        .max(1.0);
    // Whole units on the y axis, or tenths when the chart spans fewer than ten.
    let decimals = if y_max < 10.0 { 1 } else { 0 };
    // Phase markers reach a little above the data, leaving room for the legend above them.
    let marker_top = (data_top * 1.3).min(y_max * 0.97);

    let drawn = svg(chart.alt, |root| {
        let mut plot: Chart<'_, '_, RangedCoordf64> = ChartBuilder::on(root)
            .caption(chart.title, font(TITLE_PX))
            .margin(18)
            .x_label_area_size(58)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        mesh(
            plot.configure_mesh()
                .x_desc("allocator event (allocation or free), in order")
                .y_desc(format!("device memory ({unit_name})"))
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.decimals$}")),
        )
        .draw()?;
        if let Some(cap) = chart.capacity {
            capacity_line_in(&mut plot, (cap, "the card's"), per_unit, (0.0, x_max), 0.0)?;
        }
        let (width, height) = plot.plotting_area().dim_in_pixel();
        draw_phases(
            &mut plot,
            chart.phases,
            x_max / f64::from(width.max(1)),
            marker_top,
        )?;
        // Steps: each value holds until the next event.
        let steps_of = |pick: fn(&Point) -> u64| {
            let mut line = Vec::with_capacity(pts.len() * 2 + 1);
            let mut last = 0.0;
            for p in &pts {
                let y = scaled(pick(p));
                line.push((p.event as f64, last));
                line.push((p.event as f64, y));
                last = y;
            }
            line.push((x_max, last));
            line
        };
        plot.draw_series(LineSeries::new(
            steps_of(|p| p.reserved),
            RESERVED_COLOR.stroke_width(3),
        ))?
        .label("reserved (segments held from the device)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 22, y)], RESERVED_COLOR.stroke_width(3)));
        plot.draw_series(LineSeries::new(
            steps_of(|p| p.allocated),
            ALLOCATED_COLOR.stroke_width(2),
        ))?
        .label("allocated (blocks in live tensors)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 22, y)], ALLOCATED_COLOR.stroke_width(2)));
        // The legend sits under the capacity line (or the top), right if the data leaves
        // room there, else left; if neither, at the bottom, right or left, under the data.
        let line_at = chart.capacity.map_or(y_max, scaled);
        let under_line = ((1.0 - line_at / y_max) * f64::from(height)) as i32 + 24;
        let at_bottom = height as i32 - LEGEND_SIZE_PX.1 - 14;
        let (w, h) = (f64::from(width), f64::from(height));
        let corners = [
            (width as i32 - LEGEND_SIZE_PX.0, under_line),
            (14, under_line),
            (width as i32 - LEGEND_SIZE_PX.0, at_bottom),
            (14, at_bottom),
        ];
        let (legend_x, legend_y) = corners
            .into_iter()
            .find(|&(px, py)| {
                let events = (
                    f64::from(px) / w * x_max,
                    f64::from(px + LEGEND_SIZE_PX.0) / w * x_max,
                );
                let values = (
                    (1.0 - f64::from(py + LEGEND_SIZE_PX.1) / h) * y_max,
                    (1.0 - f64::from(py) / h) * y_max,
                );
                clear_of(&pts, events, values, scaled)
            })
            .unwrap_or(corners[0]);
        legend(
            plot.configure_series_labels()
                .position(SeriesLabelPosition::Coordinate(legend_x, legend_y)),
        )
        .draw()?;
        Ok(())
    })?;
    Ok(with_metadata(&drawn, "timeline", &metadata(chart, &pts)))
}

/// What was plotted, as JSON: `{"events":…,"points":…,"allocated":{"min":…,"max":…,
/// "last":…},"reserved":{…},"capacity":…}` (bytes; `points` per series, before the
/// step chart doubles them).
fn metadata(chart: &TimelineChart<'_>, pts: &[Point]) -> String {
    let series = |pick: fn(&Point) -> u64| {
        let values = pts.iter().map(pick);
        format!(
            "{{\"min\":{},\"max\":{},\"last\":{}}}",
            values.clone().min().unwrap_or(0),
            values.clone().max().unwrap_or(0),
            pts.last().map_or(0, pick)
        )
    };
    format!(
        "{{\"events\":{},\"points\":{},\"allocated\":{},\"reserved\":{},\"capacity\":{}}}",
        chart.trace.events.len(),
        pts.len(),
        series(|p| p.allocated),
        series(|p| p.reserved),
        chart
            .capacity
            .map_or_else(|| "null".to_string(), |c| c.to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumem::alloc::{EventKind, TraceEvent};

    fn trace(values: &[(u64, u64)]) -> Trace {
        Trace {
            events: values
                .iter()
                .map(|&(allocated, reserved)| TraceEvent {
                    kind: EventKind::Alloc,
                    addr: 0,
                    size: 0,
                    requested: 0,
                    label: String::new(),
                    role: None,
                    allocated,
                    reserved,
                })
                .collect(),
        }
    }

    #[test]
    fn short_traces_keep_every_event() {
        let t = trace(&[(1, 2), (3, 4), (0, 4)]);
        let p = points(&t, 10);
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[1],
            Point {
                event: 1,
                allocated: 3,
                reserved: 4
            }
        );
    }

    #[test]
    fn thinning_keeps_every_extreme() {
        let values: Vec<(u64, u64)> = (0..10_000u64)
            .map(|i| ((i * 7919) % 1000, 1000 + i / 10))
            .collect();
        let t = trace(&values);
        let p = points(&t, 50);
        assert!(p.len() <= 4 * 50, "{}", p.len());
        let max_a = values.iter().map(|v| v.0).max();
        assert_eq!(p.iter().map(|q| q.allocated).max(), max_a);
        assert_eq!(p.iter().map(|q| q.allocated).min(), Some(0));
        assert_eq!(p.iter().map(|q| q.reserved).max(), Some(1999));
        assert!(p.windows(2).all(|w| w[0].event < w[1].event));
    }

    #[test]
    fn metadata_sits_after_the_title() {
        let s = with_metadata("<svg><title>t</title><rect/></svg>", "timeline", "{}");
        assert_eq!(
            s,
            "<svg><title>t</title>\n<metadata id=\"timeline\">{}</metadata><rect/></svg>"
        );
    }
}
