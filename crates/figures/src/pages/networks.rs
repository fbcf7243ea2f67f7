//! Memory in neural networks (`networks.md`): how width and depth grow the step.

use crate::data::{self, DEEP_BATCH, DEEP_WIDTH, equation, measure, network};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::lesson::{CARD_BYTES, planning_on_card};
use gpumem::mlp::Optimizer;
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// The widest hidden layers that fit on the card at batch 32 with SGD, for 1, 3 and 5 layers.
pub fn widest_on_card() -> Result<String> {
    use crate::charts::width::{BATCH, DEPTHS};
    let mut out = String::from(
        "| hidden layers | widest that fits (engine, `plan`) | its peak allocated | the equation's widest |\n\
         | ---: | ---: | ---: | ---: |\n",
    );
    for (layers, _) in DEPTHS {
        let widest = data::widest_on_card(layers, BATCH)?
            .ok_or_else(|| anyhow!("no width fits with {layers} layers"))?;
        let peak = measure(
            &planning_on_card(),
            &network(widest, layers, Optimizer::LESSON),
            BATCH,
        )?;
        let by_equation = data::widest_by_equation(layers, BATCH)?.unwrap_or(0);
        writeln!(
            out,
            "| {layers} | {} | {} | {} |",
            grouped(widest),
            format_bytes(peak.peak_allocated),
            grouped(by_equation)
        )?;
    }
    Ok(format!(
        "At a batch of {BATCH} rows with SGD on the {} card:\n\n{out}",
        format_bytes(CARD_BYTES)
    ))
}

/// A hidden-to-hidden layer of 5000 in numbers: its parameters, and their raw float32 bytes
/// with one gradient each (plain SGD), as the page's sentence says them.
pub fn hidden_layer_in_numbers() -> Result<String> {
    let params = DEEP_WIDTH * DEEP_WIDTH + DEEP_WIDTH;
    Ok(format!(
        "For `H` = {} that is {} parameters: with a gradient each, {} of float32.",
        grouped(DEEP_WIDTH),
        grouped(params),
        format_bytes(params * 4 * 2)
    ))
}

/// What each extra hidden layer of 5000 adds to the step's peak at batch 32 with SGD.
pub fn per_layer_bytes() -> Result<String> {
    let peak = |layers: u64| -> Result<u64> {
        Ok(equation(&network(DEEP_WIDTH, layers, Optimizer::LESSON), DEEP_BATCH)?.peak_allocated)
    };
    Ok(format_bytes(peak(2)? - peak(1)?))
}
