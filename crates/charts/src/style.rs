//! One look for every chart: sizes, fonts, colours and the byte axes.
//!
//! Charts carry their own white background, so they read the same on mdBook's light themes
//! and its dark ones (coal, navy, ayu), where a transparent chart's dark text would vanish.
//! Colours are the Okabe–Ito palette, distinguishable with the common colour-vision
//! deficiencies; series that share a colour differ by dash as well.

use anyhow::Result;
use plotters::chart::{MeshStyle, SeriesLabelStyle};
use plotters::coord::CoordTranslate;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;

/// Pixel size of every chart. The book's text column is 750 px wide at most, so charts are
/// shown at about 0.94 of this size.
pub const SIZE: (u32, u32) = (800, 520);

/// Font sizes as plotters takes them. Its SVG backend writes 0.806 of the number asked for
/// (16 becomes `font-size="12.9"`), so these come out at 24, 19, 17, 17 and 16 px in the SVG:
/// 15 px or more on the page, like the book's own text.
pub const FONT: &str = "sans-serif";
pub const TITLE_PX: u32 = 30;
pub const AXIS_DESC_PX: u32 = 24;
pub const TICK_PX: u32 = 21;
pub const LEGEND_PX: u32 = 21;
pub const NOTE_PX: u32 = 20;

pub const BACKGROUND: RGBColor = WHITE;
pub const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
pub const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);

/// The Okabe–Ito colours.
pub mod palette {
    use plotters::style::RGBColor;
    pub const ORANGE: RGBColor = RGBColor(0xe6, 0x9f, 0x00);
    pub const SKY: RGBColor = RGBColor(0x56, 0xb4, 0xe9);
    pub const GREEN: RGBColor = RGBColor(0x00, 0x9e, 0x73);
    pub const YELLOW: RGBColor = RGBColor(0xf0, 0xe4, 0x42);
    pub const BLUE: RGBColor = RGBColor(0x00, 0x72, 0xb2);
    pub const VERMILION: RGBColor = RGBColor(0xd5, 0x5e, 0x00);
    pub const PURPLE: RGBColor = RGBColor(0xcc, 0x79, 0xa7);
}

/// The capacity line: red-orange, dashed, on every chart.
pub const CAPACITY: RGBColor = RGBColor(0xc0, 0x1c, 0x28);

pub const GIB: f64 = (1u64 << 30) as f64;
pub const MIB: f64 = (1u64 << 20) as f64;

/// Bytes as GiB, for a chart's y axis.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

pub fn font(px: u32) -> TextStyle<'static> {
    (FONT, px).into_font().color(&INK)
}

/// The book's look for a chart's axes and grid: fonts, a light grid on the background, dark
/// axes. `chart.configure_mesh()`, its descriptions and labels set, goes through this before
/// `.draw()`.
pub fn mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged<ValueType: std::fmt::Debug> + ValueFormatter<X::ValueType>,
    Y: Ranged<ValueType: std::fmt::Debug> + ValueFormatter<Y::ValueType>,
    DB: DrawingBackend,
{
    mesh.axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(TICK_PX))
        .bold_line_style(GRID)
        .light_line_style(BACKGROUND)
        .axis_style(INK)
}

/// The book's look for a chart's legend: its font, a nearly opaque background, a light
/// border. `chart.configure_series_labels()`, its position set, goes through this before
/// `.draw()`.
pub fn legend<'m, 'a, 'b, DB, CT>(
    labels: &'m mut SeriesLabelStyle<'a, 'b, DB, CT>,
) -> &'m mut SeriesLabelStyle<'a, 'b, DB, CT>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    labels
        .label_font(font(LEGEND_PX))
        .background_style(BACKGROUND.mix(0.92))
        .border_style(GRID)
}

/// Renders a chart into an SVG string: white background, `draw` does the rest. The SVG gets
/// a `<title>` (the alt text) so it is described when opened on its own as well.
pub fn svg(
    title: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
) -> Result<String> {
    svg_sized(SIZE, title, draw)
}

/// [`svg`] at another size: the column's width, taller for a chart of several panels.
pub fn svg_sized(
    size: (u32, u32),
    title: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&BACKGROUND)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(with_title(&out, title))
}

fn with_title(svg: &str, title: &str) -> String {
    let escaped = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    match svg
        .find("<svg")
        .and_then(|i| svg[i..].find('>').map(|j| i + j + 1))
    {
        Some(at) => format!(
            "{}\n<title>{escaped}</title>{}",
            &svg[..at].replacen("<svg ", "<svg role=\"img\" ", 1),
            &svg[at..]
        ),
        None => svg.to_string(),
    }
}

/// `+1 173 000`, `−24 000` — a difference with its sign and [`grouped`]'s digit groups.
pub fn signed(d: i64) -> String {
    let sign = if d >= 0 { "+" } else { "−" };
    format!("{sign}{}", grouped(d.unsigned_abs()))
}

/// `1 173 000` — groups of three digits split by narrow no-break spaces, as the book writes
/// numbers.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

/// Log-axis tick labels for row counts: 1, 10, 100, 1k, 10k, 100k, 1M.
pub fn rows_label(x: &f64) -> String {
    let x = x.round() as u64;
    match x {
        0..1_000 => x.to_string(),
        1_000..1_000_000 if x.is_multiple_of(1_000) => format!("{}k", x / 1_000),
        _ if x.is_multiple_of(1_000_000) => format!("{}M", x / 1_000_000),
        _ => grouped(x),
    }
}

/// Puts `json` in a `<metadata id="{id}">` element right after the SVG's `<title>`, where
/// tests and the book's checks read what a chart drew.
pub fn with_metadata(svg: &str, id: &str, json: &str) -> String {
    let element = format!("\n<metadata id=\"{id}\">{json}</metadata>");
    match svg.find("</title>") {
        Some(at) => {
            let at = at + "</title>".len();
            format!("{}{element}{}", &svg[..at], &svg[at..])
        }
        None => svg.to_string(),
    }
}

/// The y axis' unit for a chart reaching `top` bytes: GiB from a gibibyte up, else MiB.
pub fn byte_unit(top: u64) -> (f64, &'static str) {
    if top as f64 >= GIB {
        (GIB, "GiB")
    } else {
        (MIB, "MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_like_the_book() {
        assert_eq!(grouped(1_173_000), "1\u{202f}173\u{202f}000");
        assert_eq!(grouped(999), "999");
        assert_eq!(rows_label(&1000.0), "1k");
        assert_eq!(rows_label(&1_000_000.0), "1M");
    }

    #[test]
    fn the_title_goes_inside_the_svg_element() {
        let s = with_title("<?xml?>\n<svg width=\"1\">\n<rect/></svg>", "a < b");
        assert_eq!(
            s,
            "<?xml?>\n<svg role=\"img\" width=\"1\">\n<title>a &lt; b</title>\n<rect/></svg>"
        );
    }
}
