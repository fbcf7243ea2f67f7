//! Per-card memory against the number of cards: one panel per way of splitting the work,
//! one stacked bar per group size (what the fullest card holds at its peak, by category),
//! a tick at that card's peak reserved, and the card's capacity. The caller says which runs.

use crate::style::{
    self, CAPACITY, FONT, INK, LEGEND_PX, TICK_PX, TITLE_PX, byte_unit, font, mesh,
};
use anyhow::{Result, anyhow};
use gpumem::size::format_bytes;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// One group size in a panel.
#[derive(Debug, Clone)]
pub struct Bar {
    pub cards: usize,
    /// Bytes per category, bottom of the stack first (as many as the chart's categories).
    pub parts: Vec<u64>,
    /// The same card's peak reserved (the allocator's rounding and cache on top).
    pub peak_reserved: u64,
}

/// One scheme.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub bars: Vec<Bar>,
}

/// What [`per_card_svg`] draws.
#[derive(Debug, Clone)]
pub struct PerCardChart {
    pub title: String,
    /// The alt text (the SVG's `<title>`).
    pub alt: String,
    /// Each category's name and colour, bottom of the stack first.
    pub categories: Vec<(String, RGBColor)>,
    pub panels: Vec<Panel>,
    pub capacity: u64,
    /// Whose capacity it is, as the legend says it (`"the ideal card's"`).
    pub whose: String,
}

/// Panels per row.
const COLUMNS: usize = 2;
/// Height of one row of panels, in pixels.
const ROW_PX: u32 = 250;
/// Height of the chart's title.
const TITLE_AREA_PX: u32 = 50;

pub fn per_card_svg(chart: &PerCardChart) -> Result<String> {
    let cells = chart.panels.len() + 1; // the last cell holds the legend
    let rows = cells.div_ceil(COLUMNS);
    let size = (style::SIZE.0, TITLE_AREA_PX + rows as u32 * ROW_PX);
    let top = chart
        .panels
        .iter()
        .flat_map(|p| &p.bars)
        .map(|b| b.peak_reserved.max(b.parts.iter().sum()))
        .fold(chart.capacity, u64::max);
    let (unit, unit_name) = byte_unit(top);
    let y_max = (top as f64 / unit * 1.08).ceil();
    style::svg_sized(size, &chart.alt, |root| {
        let (head, body) = root.split_vertically(TITLE_AREA_PX);
        head.titled(&chart.title, font(TITLE_PX))?;
        let areas = body.split_evenly((rows, COLUMNS));
        for (panel, area) in chart.panels.iter().zip(&areas) {
            draw_panel(area, chart, panel, (unit, unit_name), y_max)?;
        }
        let legend_area = areas
            .get(chart.panels.len())
            .ok_or_else(|| anyhow!("no cell left for the legend"))?;
        draw_legend(legend_area, chart)
    })
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &PerCardChart,
    panel: &Panel,
    (unit, unit_name): (f64, &str),
    y_max: f64,
) -> Result<()> {
    let n = panel.bars.len() as f64;
    let mut c = ChartBuilder::on(area)
        .caption(&panel.title, font(LEGEND_PX))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(52)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..y_max)?;
    let labels: Vec<String> = panel.bars.iter().map(|b| b.cards.to_string()).collect();
    mesh(
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(panel.bars.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                match labels.get(i as usize) {
                    Some(l) if (x - i).abs() < 1e-6 && i >= 0.0 => l.clone(),
                    _ => String::new(),
                }
            })
            .y_labels(6)
            .y_desc(unit_name)
            .y_label_formatter(&|y| format!("{y:.0}")),
    )
    .draw()?;
    for (i, bar) in panel.bars.iter().enumerate() {
        let x = i as f64;
        let mut bottom = 0u64;
        for (bytes, (_, color)) in bar.parts.iter().zip(&chart.categories) {
            let (y0, y1) = (bottom as f64 / unit, (bottom + bytes) as f64 / unit);
            c.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.3, y0), (x + 0.3, y1)],
                color.filled(),
            )))?;
            bottom += bytes;
        }
        let r = bar.peak_reserved as f64 / unit;
        c.draw_series(std::iter::once(PathElement::new(
            [(x - 0.38, r), (x + 0.38, r)],
            INK.stroke_width(3),
        )))?;
    }
    let cap = chart.capacity as f64 / unit;
    c.draw_series(DashedLineSeries::new(
        [(-0.5, cap), (n - 0.5, cap)],
        10,
        5,
        CAPACITY.stroke_width(2),
    ))?;
    Ok(())
}

/// The legend in the cell after the last panel: categories top of the stack first, as the
/// bars read, then the tick and the capacity line.
fn draw_legend(area: &DrawingArea<SVGBackend<'_>, Shift>, chart: &PerCardChart) -> Result<()> {
    let text = |s: &str, at: (i32, i32)| Text::new(s.to_string(), at, (FONT, LEGEND_PX));
    let line_px = 27;
    let mut y = 16;
    area.draw(&Text::new(
        "x: cards in the group".to_string(),
        (12, y),
        font(TICK_PX),
    ))?;
    y += line_px + 4;
    for (name, color) in chart.categories.iter().rev() {
        area.draw(&Rectangle::new([(12, y), (34, y + 16)], color.filled()))?;
        area.draw(&text(name, (42, y - 1)))?;
        y += line_px;
    }
    area.draw(&PathElement::new(
        [(8, y + 8), (38, y + 8)],
        INK.stroke_width(3),
    ))?;
    area.draw(&text("peak reserved of that card", (42, y - 1)))?;
    y += line_px;
    area.draw(&DashedPathElement::new(
        [(8, y + 8), (38, y + 8)],
        7,
        4,
        CAPACITY.stroke_width(2),
    ))?;
    area.draw(&text(
        &format!("{} capacity, {}", chart.whose, format_bytes(chart.capacity)),
        (42, y - 1),
    ))?;
    Ok(())
}
