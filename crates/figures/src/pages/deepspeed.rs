//! DeepSpeed's memory estimators beside the engine's ZeRO-2 and ZeRO-3 (`more-than-one-card.md`).
//!
//! DeepSpeed is not run here: its two formulas are copied from its source (cited on each
//! function) with `cpu_offload=False`, and evaluated on the parameter count of the page's
//! network. They count model states only, for mixed-precision Adam.

use super::more_than_one_card::in_gib;
use crate::data::{DEEP_BATCH, SEED};
use crate::schemes::{CARD_COUNTS, setup};
use crate::style::grouped;
use anyhow::{Context, Result, anyhow};
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{MlpConfig, Precision, Strategy};
use gpumem::parallel::{CardMemory, Category, Scheme, measure_group};
use gpumem::size::format_bytes;
use gpumem::tensor::DType;
use std::fmt::Write as _;

/// A batch large enough for the activations to outweigh the sharded model states on 8
/// cards: 1024 times Challenge 2's.
pub const LARGE_BATCH: u64 = DEEP_BATCH * 1024;

/// `estimate_zero2_model_states_mem_needs(total_params, num_gpus_per_node=gpus,
/// cpu_offload=False)` in `deepspeed/runtime/zero/stage_1_and_2.py`: `4 * total_params +
/// int(16 * total_params / total_gpus)` bytes on each GPU.
pub fn zero2_bytes(total_params: u64, gpus: u64) -> u64 {
    4 * total_params + 16 * total_params / gpus
}

/// `estimate_zero3_model_states_mem_needs(total_params, largest_layer_params,
/// num_gpus_per_node=gpus, cpu_offload=False)` in `deepspeed/runtime/zero/stage3.py`:
/// `4 * largest_layer_params + int(18 * total_params / total_gpus)` bytes on each GPU.
pub fn zero3_bytes(total_params: u64, largest_layer_params: u64, gpus: u64) -> u64 {
    4 * largest_layer_params + 18 * total_params / gpus
}

/// DeepSpeed's figure for `scheme` (ZeRO-2 or ZeRO-3) on `gpus` cards for `config`.
pub fn deepspeed_bytes(config: &MlpConfig, scheme: Scheme, gpus: u64) -> Result<u64> {
    let total = config.parameter_count();
    // DeepSpeed's `largest_layer_params`: the most parameters one module holds itself.
    let largest = config
        .layer_shapes()
        .iter()
        .map(|(fan_in, fan_out)| (fan_in + 1) * fan_out)
        .max()
        .ok_or_else(|| anyhow!("a network without layers"))?;
    match scheme {
        Scheme::Zero2 => Ok(zero2_bytes(total, gpus)),
        Scheme::Zero3 => Ok(zero3_bytes(total, largest, gpus)),
        other => Err(anyhow!("DeepSpeed has no estimator for {other}")),
    }
}

/// The page's network in mixed precision (autocast with float32 parameters and GradScaler).
pub fn mixed() -> Result<MlpConfig> {
    Ok(setup()?.with_strategy(Strategy {
        precision: Precision::Mixed,
        ..Default::default()
    }))
}

/// The fullest card of `scheme` on `cards` cards at `batch` rows, on cards without limit.
pub fn engine_card(scheme: Scheme, cards: usize, batch: u64) -> Result<CardMemory> {
    let config = mixed()?;
    let group = measure_group(&planning_unlimited(), &config, scheme, cards, batch, SEED)
        .with_context(|| format!("{scheme} on {cards} cards, batch {batch}, mixed precision"))?;
    group
        .cards
        .into_iter()
        .max_by_key(|c| (c.peak_requested, std::cmp::Reverse(c.card)))
        .ok_or_else(|| anyhow!("{scheme} on {cards} cards measured no card"))
}

/// Parameters, gradients and optimizer state: what DeepSpeed's estimators count.
pub fn model_states(card: &CardMemory) -> u64 {
    [
        Category::Parameters,
        Category::Gradients,
        Category::OptimizerState,
    ]
    .iter()
    .map(|&c| card.at_peak.get(c))
    .sum()
}

/// The comparison table for ZeRO-2 and ZeRO-3, every group size, two batches.
pub fn deepspeed_table() -> Result<String> {
    let config = mixed()?;
    let mut out = format!(
        "The page's network ({} parameters), Adam, mixed precision, in GiB per card; the \
         engine's figures are its fullest card, bytes asked for:\n\n\
         | scheme | cards | DeepSpeed | engine: model states, {} rows | engine: peak, {} rows | engine: \
         peak, {} rows | of which not model states |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        grouped(config.parameter_count()),
        grouped(DEEP_BATCH),
        grouped(DEEP_BATCH),
        grouped(LARGE_BATCH),
    );
    for scheme in [Scheme::Zero2, Scheme::Zero3] {
        for n in CARD_COUNTS {
            let small = engine_card(scheme, n, DEEP_BATCH)?;
            let large = engine_card(scheme, n, LARGE_BATCH)?;
            let other = large.peak_requested - model_states(&large);
            writeln!(
                out,
                "| `{scheme}` | {n} | {} | {} | {} | {} | {} |",
                in_gib(deepspeed_bytes(&config, scheme, n as u64)?),
                in_gib(model_states(&small)),
                in_gib(small.peak_requested),
                in_gib(large.peak_requested),
                in_gib(other),
            )?;
        }
    }
    Ok(out)
}

/// Where DeepSpeed's ZeRO-3 figure and the engine's part on the most cards: the whole
/// network built before it is sharded, and what a large batch adds.
pub fn deepspeed_notes() -> Result<String> {
    let n = CARD_COUNTS[CARD_COUNTS.len() - 1];
    let config = mixed()?;
    let ds = deepspeed_bytes(&config, Scheme::Zero3, n as u64)?;
    let small = engine_card(Scheme::Zero3, n, DEEP_BATCH)?;
    let large = engine_card(Scheme::Zero3, n, LARGE_BATCH)?;
    let at = small.at_peak;
    let mut out = String::new();
    if at.gradients == 0 && at.optimizer_state == 0 && at.activations == 0 {
        write!(
            out,
            "On {n} cards at {DEEP_BATCH} rows, the engine's ZeRO-3 card peaks at {} before \
             its first step, holding nothing but parameters: every card builds the whole \
             float32 network, {}, and only then does `fully_shard` cut it into shards. \
             PyTorch does the same when the model is built on the card. DeepSpeed's formula \
             ({}) assumes a model built already sharded, so that no card ever holds it \
             whole. ",
            format_bytes(small.peak_requested),
            format_bytes(DType::F32.size() * config.parameter_count()),
            format_bytes(ds),
        )?;
    } else {
        write!(
            out,
            "On {n} cards at {DEEP_BATCH} rows, the engine's ZeRO-3 card peaks at {} against \
             DeepSpeed's {}. ",
            format_bytes(small.peak_requested),
            format_bytes(ds),
        )?;
    }
    let other = large.peak_requested - model_states(&large);
    writeln!(
        out,
        "With {} rows the activations, temporaries and buffers on each of the {n} cards come \
         to {}, {:.0} % of DeepSpeed's whole figure, and DeepSpeed counts none of them.",
        grouped(LARGE_BATCH),
        format_bytes(other),
        100.0 * other as f64 / ds as f64,
    )?;
    Ok(out)
}
