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

/// What accumulating into existing gradients costs, on one setup: the update of
/// [`crate::measured::CHALLENGE4_DEEP_LAYERS`] hidden layers (Challenge 4's deeper network),
/// the full batch in the micro-batches its demo uses, against one step of a micro-batch's rows
/// with the whole batch on the card. Both by the engine's memory equation.
#[derive(Debug, Clone)]
pub struct AccumulationCost {
    pub layers: u64,
    pub micro_batches: u64,
    pub micro_rows: u64,
    /// The accumulated update's peak, and the gradients alive at it.
    pub update_peak: u64,
    pub update_gradients: u64,
    /// One step of `micro_rows` rows: its peak with the rest of the batch added, and the
    /// gradients alive at its peak.
    pub step_peak: u64,
    pub step_gradients: u64,
    /// Every parameter's gradient: the parameters' bytes.
    pub all_gradients: u64,
}

impl AccumulationCost {
    pub fn extra(&self) -> u64 {
        self.update_peak.saturating_sub(self.step_peak)
    }
}

pub fn accumulation_cost_numbers() -> Result<AccumulationCost> {
    use crate::data::equation;
    use demos::challenge4::strategies::{self, Accumulation, Planner};
    use gpumem::fit::with_micro_batches;
    use gpumem::mlp::{Checkpointing, Precision};
    let layers = crate::measured::CHALLENGE4_DEEP_LAYERS;
    let base = MlpConfig::lesson(LESSON_WIDTH).with_layers(layers);
    let k = strategies::micro_batches(
        &Planner::new(CARD_BYTES),
        &base,
        FULL,
        Precision::Float32,
        Accumulation::Auto,
        Checkpointing::Sqrt,
    )?;
    let micro_rows = FULL.div_ceil(k);
    let update = equation(&with_micro_batches(&base, k), FULL)?;
    let step = equation(&base, micro_rows)?;
    Ok(AccumulationCost {
        layers,
        micro_batches: k,
        micro_rows,
        update_peak: update.peak_allocated,
        update_gradients: update.gradients,
        step_peak: step.peak_allocated - step.batch + update.batch,
        step_gradients: step.gradients,
        all_gradients: update.parameters,
    })
}

/// The paragraph: what the gradients of an accumulated update cost at its peak.
pub fn accumulation_cost() -> Result<String> {
    let c = accumulation_cost_numbers()?;
    Ok(format!(
        "By the engine's memory equation, Challenge 4's deeper network ({} hidden layers of \
         {}, SGD) peaks at {} with its {} rows in {} micro-batches, and one step of a \
         micro-batch's {} rows (the whole batch on the card) at {}: the {} between them is \
         every `.grad`, alive at the top of each backward pass.",
        c.layers,
        grouped(LESSON_WIDTH),
        format_bytes(c.update_peak),
        grouped(FULL),
        c.micro_batches,
        grouped(c.micro_rows),
        format_bytes(c.step_peak),
        format_bytes(c.extra()),
    ))
}

/// The deepest network of width 5000 that trains at batch 32 on the card with Adam in
/// `implementation` (planned on `plan`, like Challenge 2's).
pub fn deepest_adam_with(implementation: gpumem::mlp::OptimizerImpl) -> Result<u64> {
    use crate::data::{DEEP_BATCH, DEEP_WIDTH, MAX_DEPTH, adam, network};
    use gpumem::measure::deepest_network;
    let base = network(DEEP_WIDTH, 1, adam()).with_strategy(Strategy {
        optimizer_impl: implementation,
        ..Default::default()
    });
    let layers = deepest_network(&planning_on_card(), &base, DEEP_BATCH, MAX_DEPTH)?
        .best
        .ok_or_else(|| anyhow!("not even one hidden layer fits with {implementation:?} Adam"))?;
    if layers == MAX_DEPTH {
        return Err(anyhow!(
            "{MAX_DEPTH} layers still fit with {implementation:?} Adam"
        ));
    }
    Ok(layers)
}

/// Inline: the deepest with `fused=True`.
pub fn deepest_adam_fused() -> Result<String> {
    Ok(deepest_adam_with(gpumem::mlp::OptimizerImpl::Fused)?.to_string())
}

/// Inline: the deepest with `foreach=False`.
pub fn deepest_adam_forloop() -> Result<String> {
    Ok(deepest_adam_with(gpumem::mlp::OptimizerImpl::ForLoop)?.to_string())
}
