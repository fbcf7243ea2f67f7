//! Fitting more (`fitting-more.md`): `nn.ReLU(inplace=True)` against `nn.ReLU()` on the
//! lesson's network and card.

use crate::data::{LESSON_WIDTH, measure};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{CARD_BYTES, planning_on_card, planning_unlimited};
use gpumem::measure::largest_batch;
use gpumem::mlp::{MlpConfig, Strategy};
use gpumem::pytorch::{FIXTURE, Fixture};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// The lesson's network with or without the in-place ReLU.
pub fn lesson(inplace: bool) -> MlpConfig {
    MlpConfig::lesson(LESSON_WIDTH).with_strategy(Strategy {
        relu_inplace: inplace,
        ..Default::default()
    })
}

/// What one variant does on the lesson's card.
#[derive(Debug, Clone)]
pub struct OnCard {
    /// The full batch's peak allocated on an unlimited card.
    pub full_peak: u64,
    /// Where the full batch runs out on the card, and on which tensor.
    pub failed_in: String,
    pub label: String,
    /// The largest batch that fits, and its peaks.
    pub largest: u64,
    pub largest_allocated: u64,
    pub largest_reserved: u64,
}

pub fn on_card(inplace: bool) -> Result<OnCard> {
    let config = lesson(inplace);
    let full = measure(&planning_on_card(), &config, FULL)?;
    let oom = full
        .oom
        .ok_or_else(|| anyhow!("the full batch fits on the card"))?;
    let search = largest_batch(&planning_on_card(), &config, FULL)?;
    let largest = search
        .best
        .ok_or_else(|| anyhow!("not even one row fits"))?;
    let step = measure(&planning_on_card(), &config, largest)?;
    Ok(OnCard {
        full_peak: measure(&planning_unlimited(), &config, FULL)?.peak_allocated,
        failed_in: full
            .failed_in
            .ok_or_else(|| anyhow!("an out-of-memory error without its pass"))?
            .to_string(),
        label: oom.label,
        largest,
        largest_allocated: step.peak_allocated,
        largest_reserved: step.peak_reserved,
    })
}

/// PyTorch's fixture peak of the lesson's full batch, by the setup's name.
fn pytorch_peak(name: &str) -> Result<u64> {
    let fixture = Fixture::load(std::path::Path::new(FIXTURE)).map_err(|e| anyhow!(e))?;
    fixture
        .setups
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.peak_bytes)
        .ok_or_else(|| anyhow!("PyTorch's fixture has no setup {name}"))
}

/// The table of `nn.ReLU()` against `nn.ReLU(inplace=True)`, and PyTorch's own peaks.
pub fn relu_inplace() -> Result<String> {
    let (plain, inplace) = (on_card(false)?, on_card(true)?);
    let mut out = format!(
        "The lesson's network, SGD, on the {} card:\n\n\
         | | `nn.ReLU()` | `nn.ReLU(inplace=True)` |\n| :--- | :--- | :--- |\n",
        format_bytes(CARD_BYTES)
    );
    let row = |out: &mut String, what: &str, f: &dyn Fn(&OnCard) -> String| {
        writeln!(out, "| {what} | {} | {} |", f(&plain), f(&inplace))
    };
    row(
        &mut out,
        &format!(
            "peak allocated, all {} rows in one batch (on a card without limit)",
            grouped(FULL)
        ),
        &|c| format_bytes(c.full_peak),
    )?;
    row(&mut out, "all of them on the card: runs out in the", &|c| {
        format!("{}, allocating `{}`", c.failed_in, c.label)
    })?;
    row(&mut out, "the largest batch that fits (rows)", &|c| {
        grouped(c.largest)
    })?;
    row(&mut out, "its peak allocated / reserved", &|c| {
        format!(
            "{} / {}",
            format_bytes(c.largest_allocated),
            format_bytes(c.largest_reserved)
        )
    })?;
    let name = format!("2-{LESSON_WIDTH}x1-2/b{FULL}/sgd");
    let (torch_plain, torch_inplace) = (
        pytorch_peak(&name)?,
        pytorch_peak(&format!("{name}/inplace"))?,
    );
    let verdict = if torch_plain == torch_inplace {
        format!(
            "the same peak, {} bytes, with and without `inplace=True`",
            grouped(torch_plain)
        )
    } else {
        format!(
            "{} bytes without `inplace=True` and {} with it",
            grouped(torch_plain),
            grouped(torch_inplace)
        )
    };
    writeln!(
        out,
        "\nPyTorch's own step (the fixture `{name}` and its `/inplace` twin) reaches {verdict}."
    )?;
    Ok(out)
}
