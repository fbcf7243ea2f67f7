//! Numbers the book quotes, one module per page, as Markdown the pages include with
//! `{{#include ../generated/NAME.md}}`. Tables and paragraphs end with a newline; one-value
//! snippets (`card_capacity.md`, …) have none, so they can sit inside a sentence. This module
//! holds what several pages share.

pub mod calculator;
pub mod cards;
pub mod challenge_1;
pub mod challenge_2;
pub mod challenge_3;
pub mod challenge_4;
pub mod challenge_4_grader;
pub mod challenge_5;
pub mod core_equation;
pub mod deepspeed;
pub mod fitting_more;
pub mod gpu_h200;
pub mod gpu_h200_allocations;
pub mod instructors;
pub mod memory_equation;
pub mod monitoring;
pub mod more_than_one_card;
pub mod networks;
pub mod oom_message;
pub mod other_framework;
pub mod own_model;
pub mod parallel_fixture;

use crate::data::{self, LESSON_WIDTH, LargestBatch, measure};
use anyhow::{Result, anyhow};
use gpumem::alloc::OutOfMemory;
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{CARD_BYTES, planning_on_card};
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// `15.90 GiB`.
pub fn card_capacity() -> Result<String> {
    Ok(format_bytes(CARD_BYTES))
}

/// The card exactly, for whoever works the equation by hand: e.g. `16 282 MiB, 17 072 914 432
/// bytes` (PyTorch's two decimals of GiB are 419 KiB short of it).
pub fn card_exact() -> Result<String> {
    anyhow::ensure!(
        CARD_BYTES.is_multiple_of(1 << 20),
        "the card is not a whole number of MiB"
    );
    Ok(format!(
        "exactly {} MiB, {} bytes",
        crate::style::grouped(CARD_BYTES >> 20),
        crate::style::grouped(CARD_BYTES)
    ))
}

/// The largest batch of the lesson's network that fits on the card, and its step.
pub(crate) fn largest_batch() -> Result<LargestBatch> {
    data::largest_batch_on_card(LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the card"))
}

/// The full training set as one batch of the lesson's network, on the card: its error.
fn full_batch_error() -> Result<OutOfMemory> {
    measure(&planning_on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card: challenge 1 is moot"))
}

/// Where a measured step ran out, in words: `in the backward pass, allocating `a0.grad``.
fn failure_words(failed_in: Option<gpumem::mlp::Pass>, oom: &OutOfMemory) -> Result<String> {
    use gpumem::mlp::Pass;
    Ok(
        match failed_in.ok_or_else(|| anyhow!("an out-of-memory error without its pass"))? {
            Pass::Model => format!("while building the model, allocating `{}`", oom.label),
            pass => format!("in the {pass}, allocating `{}`", oom.label),
        },
    )
}

/// A message as a text block.
fn text_block(message: impl std::fmt::Display) -> String {
    format!("```text\n{message}\n```\n")
}

/// What a demo prints for `args` (the program's name first), run from its library: the
/// instructor page's transcripts. Only for runs that print the same on every machine (on the
/// `plan` backing, no timings).
fn transcript(run: impl FnOnce() -> Result<()>) -> Result<String> {
    let (result, text) = cli::capture(run);
    result?;
    Ok(text)
}

/// Every figure's alt text, as a list.
pub fn figure_alts() -> Result<String> {
    let mut out =
        String::from("Alt text of the book's figures (from `crates/figures/src/alts.rs`):\n\n");
    for (name, alt) in crate::alts::alts()? {
        writeln!(out, "- `{name}.svg`: {alt}")?;
    }
    Ok(out)
}
