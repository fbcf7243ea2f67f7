//! What lives in GPU memory (`memory-equation.md`): the equation against measured steps, and the
//! full batch's peak.

use crate::data::{LESSON_WIDTH, equation, measure, optimizer_name};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::estimate::reference_setups;
use gpumem::lesson::{planning_on_card, planning_unlimited};
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// Every `reference_setups()` entry: the equation's peak against one measured step on plan.
pub fn estimate_table() -> Result<String> {
    let mut out = String::from(
        "| layers × width | batch | optimizer | the equation (bytes) | measured (bytes) | equal |\n\
         | :--- | ---: | :--- | ---: | ---: | :---: |\n",
    );
    let setups = reference_setups();
    let mut equal = 0;
    for (config, batch) in &setups {
        let predicted = equation(config, *batch)?.peak_allocated;
        let measured = measure(&planning_unlimited(), config, *batch)?.peak_allocated;
        let same = predicted == measured;
        equal += usize::from(same);
        writeln!(
            out,
            "| {}\u{a0}×\u{a0}{} | {} | {} | {} | {} | {} |",
            config.layers,
            grouped(config.hidden),
            grouped(*batch),
            optimizer_name(&config.optimizer),
            grouped(predicted),
            grouped(measured),
            if same { "yes" } else { "**no**" },
        )?;
    }
    let agree = if equal == setups.len() {
        format!("all {}", setups.len())
    } else {
        format!("{equal} of {}", setups.len())
    };
    let verdict = format!(
        "Layers × width: hidden layers and their width. Measured: `max_memory_allocated()` \
         after one step on the `plan` backing. The equation and the measurement agree to the byte on {agree} \
         setups."
    );
    Ok(format!("{out}\n{verdict}\n"))
}

/// The full training set's predicted peak, e.g. `17.50 GiB`.
pub fn full_batch_peak() -> Result<String> {
    Ok(format_bytes(
        equation(&MlpConfig::lesson(LESSON_WIDTH), FULL)?.peak_allocated,
    ))
}

/// What the failing full-batch step tried to allocate, e.g. `8.74 GiB`.
pub fn full_batch_tried() -> Result<String> {
    let step = measure(&planning_on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card"))?;
    Ok(format_bytes(oom.tried))
}
