//! The lesson's out-of-memory message and the figures it prints, read from the text itself so
//! that what the book derives from them (the memory outside the allocator) has one source.

use std::fmt;

/// The lesson's message, verbatim, as its "Memory considerations" episode prints it.
pub const LESSON_OOM: &str = "RuntimeError: CUDA out of memory. Tried to allocate 8.74 GiB \
(GPU 0; 15.90 GiB total capacity; 8.84 GiB already allocated; 6.32 GiB free; 8.86 GiB \
reserved in total by PyTorch)";

/// The lesson's figures as printed, in hundredths of a GiB (so sums are exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LessonFigures {
    pub tried: u64,
    pub total: u64,
    pub allocated: u64,
    pub free: u64,
    pub reserved: u64,
}

/// Why the message's figures could not be read (only if [`LESSON_OOM`] is edited badly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureError(String);

impl fmt::Display for FigureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FigureError {}

fn err(text: impl Into<String>) -> FigureError {
    FigureError(text.into())
}

impl LessonFigures {
    /// Total − free − reserved: what the card held outside the allocator.
    pub fn outside(&self) -> Result<u64, FigureError> {
        self.total
            .checked_sub(self.free + self.reserved)
            .ok_or_else(|| err("the lesson's free and reserved add up to more than its total"))
    }
}

/// `8.74 GiB` → 874.
pub fn hundredths(number: &str, unit: &str) -> Result<u64, FigureError> {
    if unit != "GiB" {
        return Err(err(format!(
            "the lesson's figure `{number} {unit}` is not in GiB"
        )));
    }
    let (whole, frac) = number
        .split_once('.')
        .filter(|(_, f)| f.len() == 2)
        .ok_or_else(|| err(format!("`{number}` is not written with two decimals")))?;
    let parse = |s: &str| {
        s.parse::<u64>()
            .map_err(|e| err(format!("`{number}`: {e}")))
    };
    Ok(parse(whole)? * 100 + parse(frac)?)
}

/// The figure written just before `label` (`15.90 GiB total capacity`).
fn before(label: &str) -> Result<u64, FigureError> {
    let end = LESSON_OOM
        .find(label)
        .ok_or_else(|| err(format!("no `{label}` in the lesson's message")))?;
    let mut words = LESSON_OOM[..end].split_whitespace().rev();
    match (words.next(), words.next()) {
        (Some(unit), Some(number)) => hundredths(number, unit),
        _ => Err(err(format!("no figure before `{label}`"))),
    }
}

/// Every figure of [`LESSON_OOM`].
pub fn lesson_figures() -> Result<LessonFigures, FigureError> {
    let after = LESSON_OOM
        .split_once("Tried to allocate ")
        .ok_or_else(|| err("no request in the lesson's message"))?
        .1;
    let mut words = after.split_whitespace();
    let tried = match (words.next(), words.next()) {
        (Some(n), Some(u)) => hundredths(n, u)?,
        _ => return Err(err("no figure after `Tried to allocate`")),
    };
    Ok(LessonFigures {
        tried,
        total: before(" total capacity")?,
        allocated: before(" already allocated")?,
        free: before(" free;")?,
        reserved: before(" reserved in total")?,
    })
}

/// Hundredths of a GiB as the lesson prints them, e.g. `0.72 GiB`.
pub fn hundredths_text(h: u64) -> String {
    format!("{}.{:02} GiB", h / 100, h % 100)
}

/// Hundredths of a GiB as a size the flags read, e.g. `0.72GiB`.
pub fn hundredths_arg(h: u64) -> String {
    format!("{}.{:02}GiB", h / 100, h % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lessons_figures_read_from_its_message() {
        let l = lesson_figures().unwrap();
        assert_eq!(
            l,
            LessonFigures {
                tried: 874,
                total: 1590,
                allocated: 884,
                free: 632,
                reserved: 886
            }
        );
        assert_eq!(hundredths_arg(l.outside().unwrap()), "0.72GiB");
        assert!(hundredths("8.7", "GiB").is_err());
        assert!(hundredths("8.74", "MiB").is_err());
        assert!(hundredths("a.74", "GiB").is_err());
    }
}
