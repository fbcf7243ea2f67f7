//! Challenge 2 (`challenge-2.md`): how deep before the card runs out.

use crate::data::{self, DEEP_BATCH, DEEP_WIDTH, equation, network, optimizer_name};
use crate::style::grouped;
use anyhow::Result;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::{Optimizer, Pass};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

use super::text_block;

/// Challenge 2: the deepest network of width 5000 at batch 32 that fits, SGD and Adam.
pub fn challenge2_depth() -> Result<String> {
    let mut out = format!(
        "Hidden layers of {} at a batch of {DEEP_BATCH} rows on the ideal {} card, two steps on `plan` \
         for each depth:\n\n\
         | optimizer | deepest that fits | its peak allocated | its peak reserved | the equation's deepest |\n\
         | :--- | ---: | ---: | ---: | ---: |\n",
        grouped(DEEP_WIDTH),
        format_bytes(CARD_BYTES)
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
        let where_ = match fit.failed_in {
            Pass::Model => "while building the model".to_string(),
            pass => format!("in the {pass}"),
        };
        remarks.push(format!(
            "With {name}, {} layers run out of memory {where_}, allocating `{}`.",
            fit.layers + 1,
            fit.oom.label
        ));
        remarks.push(match fit.equation_layers.cmp(&fit.layers) {
            std::cmp::Ordering::Equal => format!(
                "The equation's answer, {} layers, is the engine's.",
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

/// Adam's depth under PyTorch 2.0 against 2.1, as the demo's `--torch` runs them: the two
/// differ only in `foreach` Adam's denominators (and the message's words).
pub fn adam_by_version() -> Result<String> {
    use gpumem::mlp::ForeachDenom;
    use gpumem::versions::{KNOWN, TorchVersion};
    let last_out_of_place = KNOWN
        .iter()
        .rev()
        .find(|r| r.foreach_denom == ForeachDenom::OutOfPlace)
        .ok_or_else(|| anyhow::anyhow!("no version makes Adam's denominators out of place"))?;
    let first_in_place = KNOWN
        .iter()
        .find(|r| r.version > last_out_of_place.version)
        .ok_or_else(|| anyhow::anyhow!("no version after {}", last_out_of_place.version))?;
    let depth = |v: TorchVersion| data::deepest_fit_under(v, data::adam());
    let (old, new) = (
        depth(last_out_of_place.version)?,
        depth(first_in_place.version)?,
    );
    Ok(format!(
        "Adam's depth also depends on the PyTorch version: with `--torch {}`, {} layers fit, \
         and with `--torch {}`, {} (both with cuBLAS's workspaces in the allocator). Up to {}, \
         `foreach` Adam kept a second set of weight-sized temporaries at the update (the \
         denominators, made out of place beside the square roots); {} adds `eps` in place.",
        last_out_of_place.version,
        old.layers,
        first_in_place.version,
        new.layers,
        last_out_of_place.version,
        first_in_place.version,
    ))
}

/// Challenge 2's out-of-memory message at one layer too many (SGD), as a text block.
pub fn challenge2_oom() -> Result<String> {
    Ok(text_block(data::deepest_fit(Optimizer::LESSON)?.oom))
}

/// The lesson's "about 5 hidden layers of 5000": what they need at batch 32 with SGD and
/// with Adam, and their share of the card.
pub fn lesson_five_layers() -> Result<String> {
    const LESSON_LAYERS: u64 = 5;
    let share = |o: Optimizer| -> Result<(u64, String)> {
        let peak = equation(&network(DEEP_WIDTH, LESSON_LAYERS, o), DEEP_BATCH)?.peak_allocated;
        let percent = 100.0 * peak as f64 / CARD_BYTES as f64;
        Ok((peak, format!("{percent:.0}\u{a0}%")))
    };
    let (sgd, sgd_share) = share(Optimizer::LESSON)?;
    let (adam, adam_share) = share(data::adam())?;
    Ok(format!(
        "{} with SGD and {} with Adam: {sgd_share} and {adam_share} of the ideal {} card",
        format_bytes(sgd),
        format_bytes(adam),
        format_bytes(CARD_BYTES)
    ))
}

pub fn deepest_sgd() -> Result<String> {
    Ok(data::deepest_fit(Optimizer::LESSON)?.layers.to_string())
}

pub fn deepest_adam() -> Result<String> {
    Ok(data::deepest_fit(data::adam())?.layers.to_string())
}

/// Where one layer too many runs out with SGD, and on which tensor.
pub fn deepest_sgd_failure() -> Result<String> {
    let fit = data::deepest_fit(Optimizer::LESSON)?;
    super::failure_words(Some(fit.failed_in), &fit.oom)
}

/// Where one layer too many runs out with Adam, and on which tensor.
pub fn deepest_adam_failure() -> Result<String> {
    let fit = data::deepest_fit(data::adam())?;
    super::failure_words(Some(fit.failed_in), &fit.oom)
}
