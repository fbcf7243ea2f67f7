//! The instructors' two plans: the lesson's core in one session, and the whole book in a day.
//!
//! The minutes are **our estimates**, inputs we chose for planning a live session — not
//! measurements. What is computed: each block's start, each plan's total, and beside each block
//! the reading time of the pages it covers (from [`crate::reading`]), for whoever studies alone.

use anyhow::{Context, Result};
use std::fmt::Write as _;

/// One block of a session: what happens, the minutes we plan for it, the pages it covers.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub what: &'static str,
    pub minutes: usize,
    /// Files under `src/` whose reading time is shown beside the block.
    pub pages: &'static [&'static str],
}

const fn block(what: &'static str, minutes: usize, pages: &'static [&'static str]) -> Block {
    Block {
        what,
        minutes,
        pages,
    }
}

/// The core: the lesson's part of the book, the two demos and both exercises' core parts.
pub const CORE: &[Block] = &[
    block(
        "What lives in GPU memory: the six kinds, the chart, the calculator",
        7,
        &["memory-equation.md"],
    ),
    block(
        "Mini-batching, then `cargo run -p challenge1` (the full batch runs out)",
        6,
        &["mini-batching.md"],
    ),
    block(
        "Learners: Challenge 1's exercise, its core",
        12,
        &["challenge-1.md"],
    ),
    block(
        "Memory in neural networks, then `cargo run -p challenge2` (how deep?)",
        6,
        &["networks.md"],
    ),
    block(
        "Learners: Challenge 2's exercise, its core",
        10,
        &["challenge-2.md"],
    ),
    block(
        "Monitoring: allocated and reserved, `memory_summary()`, the message, a snapshot",
        8,
        &["monitoring.md"],
    ),
    block(
        "Your own model: a recorded transformer's replay on another card",
        4,
        &["own-model.md"],
    ),
    block(
        "Key points, where to get help, questions",
        4,
        &["key-points.md", "help.md"],
    ),
];

/// The rest of the book, after the core, for a full day.
pub const REST_OF_DAY: &[Block] = &[
    block("Break", 15, &[]),
    block(
        "Setup, further: the other demos, the devices, the PyTorch scripts",
        10,
        &["setup-further.md"],
    ),
    block(
        "When training dies after a few epochs, then Challenge 3's three demos",
        25,
        &["after-a-few-epochs.md"],
    ),
    block(
        "Learners: Challenge 3's exercise, the core, then going further",
        50,
        &["challenge-3.md"],
    ),
    block("Lunch", 60, &[]),
    block(
        "Fitting more, then `cargo run -p challenge4`",
        25,
        &["fitting-more.md"],
    ),
    block(
        "Learners: Challenge 4's exercise, the core, then going further",
        45,
        &["challenge-4.md"],
    ),
    block("Break", 15, &[]),
    block(
        "More than one card, then `cargo run -p challenge5`",
        20,
        &["more-than-one-card.md"],
    ),
    block("Learners: Challenge 5's exercise", 30, &["challenge-5.md"]),
    block(
        "Inside the caching allocator, with `memviz` on a snapshot",
        20,
        &["allocator.md"],
    ),
    block(
        "Your own model, further: what-ifs on a learner's recording",
        15,
        &["own-model-further.md"],
    ),
    block(
        "The equation in the engine's code; questions",
        15,
        &["equation-code.md"],
    ),
];

/// The planned minutes of a list of blocks.
pub fn total(blocks: &[Block]) -> usize {
    blocks.iter().map(|b| b.minutes).sum()
}

fn clock(minutes: usize) -> String {
    format!("{}:{:02}", minutes / 60, minutes % 60)
}

/// One plan's table: start, block, planned minutes, the pages' reading time.
fn table(
    out: &mut String,
    blocks: &[Block],
    start: usize,
    reading: &[crate::reading::Page],
) -> Result<()> {
    writeln!(
        out,
        "| starts | block | planned | its pages' reading time |"
    )?;
    writeln!(out, "| ---: | :--- | ---: | ---: |")?;
    let mut at = start;
    for b in blocks {
        let mut words = 0;
        for file in b.pages {
            let page = reading
                .iter()
                .find(|p| p.file == *file)
                .with_context(|| format!("{file} is not in SUMMARY.md"))?;
            words += page.words;
        }
        let read = if b.pages.is_empty() {
            "—".to_string()
        } else {
            format!("{} min", crate::reading::minutes(words))
        };
        writeln!(
            out,
            "| {} | {} | {} min | {read} |",
            clock(at),
            b.what,
            b.minutes
        )?;
        at += b.minutes;
    }
    Ok(())
}

/// `generated/session_plans.md`: the core session (anchor `core`) and the full day (`day`).
pub fn session_plans() -> Result<String> {
    let reading = crate::reading::pages(&crate::book::book_src())?;
    let mut out = String::from("<!-- ANCHOR: core -->\n");
    table(&mut out, CORE, 0, &reading)?;
    writeln!(
        out,
        "\n**{} minutes** in all (our estimate, chosen for planning, not measured).",
        total(CORE)
    )?;
    writeln!(out, "<!-- ANCHOR_END: core -->\n<!-- ANCHOR: day -->")?;
    table(&mut out, REST_OF_DAY, total(CORE), &reading)?;
    let day = total(CORE) + total(REST_OF_DAY);
    writeln!(
        out,
        "\n**{} h {:02} min** from the first block to the last, breaks included (our \
         estimate, chosen for planning, not measured).",
        day / 60,
        day % 60
    )?;
    writeln!(out, "<!-- ANCHOR_END: day -->")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame: the core fits a 45–60 minute session; the day is a working day.
    #[test]
    fn the_core_fits_an_hour_and_everything_a_day() {
        assert!((45..=60).contains(&total(CORE)), "{}", total(CORE));
        let day = total(CORE) + total(REST_OF_DAY);
        assert!((5 * 60..=8 * 60).contains(&day), "{day}");
    }

    /// Every page of the book's two teaching parts is in exactly one block of the plans, and
    /// the core session covers exactly the lesson's part.
    #[test]
    fn the_plans_cover_the_lesson_and_going_further_once() {
        let pages = crate::reading::pages(&crate::book::book_src()).unwrap();
        let core: Vec<&str> = CORE.iter().flat_map(|b| b.pages.iter().copied()).collect();
        let rest: Vec<&str> = REST_OF_DAY
            .iter()
            .flat_map(|b| b.pages.iter().copied())
            .collect();
        let part = |name: &str| -> Vec<&str> {
            pages
                .iter()
                .filter(|p| p.part == name)
                .map(|p| p.file.as_str())
                .collect()
        };
        assert_eq!(core, part("The lesson"));
        assert_eq!(rest, part("Going further"));
    }
}
