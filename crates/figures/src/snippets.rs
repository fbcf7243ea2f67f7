//! Numbers the book quotes, as Markdown the pages include with
//! `{{#include ../generated/NAME.md}}`. Tables and paragraphs end with a newline; one-value
//! snippets (`card_capacity.md`, …) have none, so they can sit inside a sentence.

use crate::alts::FIGURES;
use crate::data::{
    self, DEEP_BATCH, DEEP_WIDTH, LESSON_WIDTH, LargestBatch, card, equation, measure, network,
    on_card, optimizer_name, unbounded,
};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::estimate::reference_setups;
use gpumem::mlp::{MlpConfig, Optimizer};
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
        let measured = measure(&unbounded(), config, *batch)?.peak_allocated;
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

/// Challenge 1: the whole training set as one batch, by category, and what the card says.
pub fn challenge1_full_batch() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let e = equation(&config, FULL)?;
    let step = measure(&on_card(), &config, FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card: challenge 1 is moot"))?;
    let largest = largest_batch()?;
    let mut out = format!(
        "The lesson's network (2 features, one hidden layer of {}, 2 classes, SGD) with all \
         {} training rows as one batch, by the memory equation:\n\n\
         | memory | bytes |\n| :--- | ---: |\n",
        grouped(LESSON_WIDTH),
        grouped(FULL)
    );
    for (name, bytes) in [
        ("parameters", e.parameters),
        ("gradients", e.gradients),
        ("optimizer state", e.optimizer_state),
        ("input batch", e.input_batch),
        ("activations", e.activations),
        ("temporaries", e.temporaries),
    ] {
        writeln!(out, "| {name} | {} |", format_bytes(bytes))?;
    }
    writeln!(
        out,
        "| **peak allocated** | **{}** |\n",
        format_bytes(e.peak_allocated)
    )?;
    writeln!(
        out,
        "On the {} card, one step on `plan` fails while allocating `{}`:\n\n```text\n{oom}\n```\n",
        format_bytes(card()),
        oom.label
    )?;
    writeln!(
        out,
        "The largest batch that fits is {} rows: its step peaks at {} allocated and {} reserved.",
        grouped(largest.rows),
        format_bytes(largest.step.peak_allocated),
        format_bytes(largest.step.peak_reserved)
    )?;
    Ok(out)
}

/// Challenge 2: the deepest network of width 5000 at batch 32 that fits, SGD and Adam.
pub fn challenge2_depth() -> Result<String> {
    let mut out = format!(
        "Hidden layers of {} at a batch of {DEEP_BATCH} rows on the {} card, one step on `plan` \
         for each depth:\n\n\
         | optimizer | deepest that fits | its peak allocated | its peak reserved | the equation's deepest |\n\
         | :--- | ---: | ---: | ---: | ---: |\n",
        grouped(DEEP_WIDTH),
        format_bytes(card())
    );
    let mut remarks = Vec::new();
    for optimizer in [Optimizer::LESSON, data::adam()] {
        let fit = data::deepest_fit(optimizer)?;
        let name = optimizer_name(&optimizer);
        writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            fit.layers,
            format_bytes(fit.step.peak_allocated),
            format_bytes(fit.step.peak_reserved),
            fit.equation_layers,
        )?;
        let where_ = if fit.failed_in == "model" {
            "while building the model"
        } else {
            "during the step"
        };
        remarks.push(format!(
            "With {name}, {} layers run out of memory {where_}, allocating `{}`.",
            fit.layers + 1,
            fit.oom.label
        ));
        remarks.push(match fit.equation_layers.cmp(&fit.layers) {
            std::cmp::Ordering::Equal => format!(
                "The equation's answer, {} layers, is the measured one.",
                fit.layers
            ),
            std::cmp::Ordering::Greater => format!(
                "The equation allows {} layers, {} more than fit: it counts the bytes tensors \
                 hold (allocated), while the card must also hold what the allocator keeps \
                 cached (reserved, {} at {} layers).",
                fit.equation_layers,
                fit.equation_layers - fit.layers,
                format_bytes(fit.step.peak_reserved),
                fit.layers
            ),
            std::cmp::Ordering::Less => format!(
                "The equation allows only {} layers, yet {} fit.",
                fit.equation_layers, fit.layers
            ),
        });
    }
    Ok(format!("{out}\n{}\n", remarks.join(" ")))
}

/// The widest hidden layers that fit on the card at batch 32 with SGD, for 1, 3 and 5 layers.
pub fn widest_on_card() -> Result<String> {
    use crate::charts::width::{BATCH, DEPTHS};
    let mut out = String::from(
        "| hidden layers | widest that fits (measured) | its peak allocated | the equation's widest |\n\
         | ---: | ---: | ---: | ---: |\n",
    );
    for (layers, _) in DEPTHS {
        let widest = data::widest_on_card(layers, BATCH)?
            .ok_or_else(|| anyhow!("no width fits with {layers} layers"))?;
        let peak = measure(
            &on_card(),
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
        format_bytes(card())
    ))
}

/// Every figure's alt text, as a list.
pub fn figure_alts() -> Result<String> {
    let mut out =
        String::from("Alt text of the book's figures (from `crates/figures/src/alts.rs`):\n\n");
    for (name, alt) in FIGURES {
        writeln!(out, "- `{name}.svg`: {alt}")?;
    }
    Ok(out)
}

/// `15.90 GiB`.
pub fn card_capacity() -> Result<String> {
    Ok(format_bytes(card()))
}

/// The full training set's predicted peak, e.g. `17.50 GiB`.
pub fn full_batch_peak() -> Result<String> {
    Ok(format_bytes(
        equation(&MlpConfig::lesson(LESSON_WIDTH), FULL)?.peak_allocated,
    ))
}

/// What the failing full-batch step tried to allocate, e.g. `8.74 GiB`.
pub fn full_batch_tried() -> Result<String> {
    let step = measure(&on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card"))?;
    Ok(format_bytes(oom.tried))
}

/// The largest batch of the lesson's network that fits on the card, e.g. `710 410`.
pub fn largest_batch_on_card() -> Result<String> {
    Ok(grouped(largest_batch()?.rows))
}

pub fn deepest_sgd() -> Result<String> {
    Ok(data::deepest_fit(Optimizer::LESSON)?.layers.to_string())
}

pub fn deepest_adam() -> Result<String> {
    Ok(data::deepest_fit(data::adam())?.layers.to_string())
}

/// The largest batch of the lesson's network that fits on the card, and its step.
fn largest_batch() -> Result<LargestBatch> {
    data::largest_batch_on_card(LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the card"))
}
