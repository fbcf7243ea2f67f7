//! Which card a number is for: the ideal card (its memory all for tensors, the engine's
//! default) and the lesson's card as its message shows it (`--card lesson`), with the
//! headline numbers re-derived on each (`allocator.md`, `challenge-1.md`, `challenge-2.md`).

use crate::data::{self, LESSON_WIDTH, measure};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{Card, LESSON_OOM, planning_on};
use gpumem::mlp::{MlpConfig, Optimizer};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

use super::text_block;

/// The largest batch of Challenge 1's network on `card`.
fn largest(card: Card) -> Result<u64> {
    Ok(data::largest_batch_on(card, LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on {card}"))?
        .rows)
}

/// What a card's matrix products take through the allocator, in words.
fn workspaces(card: Card) -> String {
    let w = card.workspaces();
    if w.is_none() {
        return match card.torch() {
            Some(r) => format!(
                "none: PyTorch {}'s cuBLAS keeps its own, outside the allocator",
                r.asked
            ),
            None => "none".into(),
        };
    }
    let lt = if w.lt_per_call {
        format!(
            "{} of cuBLASLt's for each forward product",
            mib_or_bytes(w.lt)
        )
    } else {
        format!("{} of cuBLASLt's per thread", mib_or_bytes(w.lt))
    };
    format!(
        "{} of cuBLAS's per thread (two threads: yours and autograd's), {lt}",
        format_bytes(w.cublas)
    )
}

/// Which PyTorch's defaults a card runs, in words.
fn defaults(card: Card) -> String {
    match card.torch() {
        Some(r) => r.describe(),
        None => "PyTorch 2's (zero_grad() frees the gradients, foreach optimizers)".into(),
    }
}

/// Whole MiB as `1 MiB`, other sizes as PyTorch prints them.
fn mib_or_bytes(bytes: u64) -> String {
    if bytes > 0 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format_bytes(bytes)
    }
}

/// Memory outside the allocator as the lesson's message prints it (`0.72 GiB`), or `none`.
fn outside_text(card: Card) -> Result<String> {
    match card {
        Card::Ideal => Ok("none".into()),
        Card::Lesson => lesson_outside(),
    }
}

/// Both cards side by side: what each holds besides tensors, and the headline numbers.
pub fn cards_table() -> Result<String> {
    let mut out = String::from(
        "| | the ideal card (default) | the lesson's card (`--card lesson`) |\n\
         | :--- | ---: | ---: |\n",
    );
    let row = |out: &mut String, name: &str, f: &dyn Fn(Card) -> Result<String>| -> Result<()> {
        writeln!(
            out,
            "| {name} | {} | {} |",
            f(Card::Ideal)?,
            f(Card::Lesson)?
        )?;
        Ok(())
    };
    row(&mut out, "capacity", &|c| Ok(format_bytes(c.capacity())))?;
    row(&mut out, "held outside the allocator", &outside_text)?;
    row(&mut out, "PyTorch's defaults", &|c| Ok(defaults(c)))?;
    row(&mut out, "library workspaces in the allocator", &|c| {
        Ok(workspaces(c))
    })?;
    row(
        &mut out,
        &format!(
            "largest batch, Challenge 1's network (width {})",
            grouped(LESSON_WIDTH)
        ),
        &|c| Ok(grouped(largest(c)?)),
    )?;
    for optimizer in [Optimizer::LESSON, data::adam()] {
        let name = format!(
            "deepest at batch {}, width {}, {}",
            data::DEEP_BATCH,
            grouped(data::DEEP_WIDTH),
            data::optimizer_name(&optimizer)
        );
        row(&mut out, &name, &|c| {
            Ok(data::deepest_fit_on(c, optimizer)?.layers.to_string())
        })?;
    }
    Ok(out)
}

/// Inline: the largest batch on the lesson's card.
pub fn largest_batch_lesson_card() -> Result<String> {
    Ok(grouped(largest(Card::Lesson)?))
}

/// How the lesson's card's largest batch and deepest networks compare with the ideal card's.
pub fn lesson_card_compared() -> Result<String> {
    let (ideal, lesson) = (largest(Card::Ideal)?, largest(Card::Lesson)?);
    let batch = if ideal == lesson {
        "the same as on the ideal card".to_string()
    } else {
        format!("against {} on the ideal card", grouped(ideal))
    };
    let mut depths = Vec::new();
    let mut adam_deeper = false;
    for optimizer in [Optimizer::LESSON, data::adam()] {
        let i = data::deepest_fit_on(Card::Ideal, optimizer)?.layers;
        let l = data::deepest_fit_on(Card::Lesson, optimizer)?.layers;
        adam_deeper |= optimizer != Optimizer::LESSON && l > i;
        let unit = if depths.is_empty() {
            " hidden layers"
        } else {
            ""
        };
        depths.push(format!(
            "{l}{unit} with {} ({i} on the ideal card)",
            data::optimizer_name(&optimizer)
        ));
    }
    let why = if adam_deeper {
        " Adam goes deeper there because its for-loop update makes its temporaries one \
         parameter at a time, where `foreach` makes them for all parameters at once."
    } else {
        ""
    };
    Ok(format!(
        "On it, Challenge 1's largest full batch is {} rows, {batch}. Challenge 2's deepest \
         network at batch {} has {}.{why}",
        grouped(lesson),
        data::DEEP_BATCH,
        depths.join(" and ")
    ))
}

/// Inline: the deepest networks on the lesson's card, SGD then Adam, as "N and M".
pub fn deepest_lesson_card() -> Result<String> {
    let sgd = data::deepest_fit_on(Card::Lesson, Optimizer::LESSON)?.layers;
    let adam = data::deepest_fit_on(Card::Lesson, data::adam())?.layers;
    Ok(format!("{sgd} and {adam}"))
}

/// The lesson's message above the engine's for the same attempt on the lesson's card.
pub fn lesson_card_message() -> Result<String> {
    let oom = measure(
        &planning_on(Card::Lesson),
        &MlpConfig::lesson(LESSON_WIDTH),
        FULL,
    )?
    .oom
    .ok_or_else(|| anyhow!("the full training set fits on the lesson's card"))?;
    Ok(text_block(format!(
        "The lesson:\n{LESSON_OOM}\n\nThe engine on the lesson's card \
         (cargo run -p challenge1 -- --card lesson --backend plan):\n{oom}"
    )))
}

/// The lesson's card one row past its largest batch: its peaks at the largest batch against
/// what the card leaves the allocator, and how one row more fails.
pub fn lesson_card_one_row_more() -> Result<String> {
    let best = data::largest_batch_on(Card::Lesson, LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the lesson's card"))?;
    let rows = best.rows + 1;
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let left = Card::Lesson.capacity() - Card::Lesson.outside();
    let fails = measure(
        &planning_on(Card::Lesson),
        &Card::Lesson.config(&config),
        rows,
    )?;
    let oom = fails
        .oom
        .ok_or_else(|| anyhow!("{rows} rows fit on the lesson's card"))?;
    let how = if oom.is_fragmentation() {
        format!(
            "the cache then holds {} unused, more than the request, in no block large enough: \
             fragmentation, as on the ideal card",
            format_bytes(oom.cached_unused())
        )
    } else {
        format!(
            "the cache holds only {} unused, less than the request, and the card has no room \
             for another segment",
            format_bytes(oom.cached_unused())
        )
    };
    Ok(format!(
        "At its largest batch, {} rows, the step peaks at {} allocated and {} reserved, within \
         the {} the card leaves the allocator. One row more runs out in the {}, allocating `{}` \
         ({}): {how}.\n",
        grouped(best.rows),
        format_bytes(best.step.peak_allocated),
        format_bytes(best.step.peak_reserved),
        format_bytes(left),
        fails
            .failed_in
            .map_or("step".to_string(), |p| p.to_string()),
        oom.label,
        format_bytes(oom.requested),
    ))
}

/// The commands that show it.
pub fn lesson_card_one_row_more_commands() -> Result<String> {
    Ok(super::monitoring::boundary_commands(
        "--card lesson --backend plan",
        largest(Card::Lesson)?,
    ))
}

/// The lesson's card taken apart: the largest batch with only its outside memory, and with
/// only its PyTorch's defaults.
pub fn lesson_card_parts() -> Result<String> {
    let base = MlpConfig::lesson(LESSON_WIDTH);
    let largest_with = |outside: bool, defaults: bool| -> Result<String> {
        let mut options = planning_on(Card::Lesson);
        if !outside {
            options.allocator.context_memory = 0;
        }
        let config = if defaults {
            Card::Lesson.config(&base)
        } else {
            base.clone()
        };
        let search = gpumem::measure::largest_batch(&options, &config, FULL)?;
        Ok(grouped(
            search.best.ok_or_else(|| anyhow!("no batch fits"))?,
        ))
    };
    Ok(format!(
        "With only the {} outside the allocator the largest batch is {} rows; with only PyTorch \
         {}'s defaults, {} rows.",
        lesson_outside()?,
        largest_with(true, false)?,
        gpumem::lesson::LESSON_TORCH,
        largest_with(false, true)?
    ))
}

/// Inline: PyTorch's default cuBLAS workspace before Hopper, in bytes (`8 519 680`).
pub fn cublas_workspace_default() -> Result<String> {
    Ok(grouped(gpumem::cublas::parse_workspace_config(
        gpumem::cublas::DEFAULT_CONFIG,
    )?))
}

/// Inline: its size on Hopper (`32.00 MiB`).
pub fn cublas_workspace_hopper() -> Result<String> {
    Ok(format_bytes(gpumem::cublas::LARGE_WORKSPACE))
}

/// Inline: cuBLASLt's default workspace, in whole MiB (`1 MiB`).
pub fn cublaslt_workspace() -> Result<String> {
    Ok(mib_or_bytes(gpumem::cublas::DEFAULT_LT_WORKSPACE))
}

/// Inline: the lesson's card's memory outside the allocator, as the lesson prints sizes.
pub fn lesson_outside() -> Result<String> {
    let h = gpumem::lesson::lesson_figures()
        .and_then(|l| l.outside())
        .map_err(|e| anyhow!(e))?;
    Ok(gpumem::lesson::hundredths_text(h))
}

/// PyTorch's versions as the engine knows them (`gpumem::versions::KNOWN`): what each changed
/// by default, as a table, then each row's source.
pub fn torch_versions() -> Result<String> {
    use gpumem::versions::{DEFAULT_COMPUTE_CAPABILITY, KNOWN, Rules, Workspaces};
    let mut out = String::from(
        "| PyTorch | workspaces in the allocator | `zero_grad()` | optimizers | `foreach` Adam's temporaries | exception |\n\
         | :--- | :--- | :--- | :--- | :--- | :--- |\n",
    );
    for r in KNOWN {
        let workspaces = match r.workspaces {
            Workspaces::Outside => "none".to_string(),
            Workspaces::Allocator(_) => {
                let w = Rules::of(r.version).workspaces(DEFAULT_COMPUTE_CAPABILITY);
                let cublas = match w.cublas {
                    0 => None,
                    b => Some(format!("cuBLAS {}/thread", format_bytes(b))),
                };
                let lt = match (w.lt, w.lt_per_call) {
                    (0, _) => None,
                    (lt, true) => Some(format!("cuBLASLt {}/call", mib_or_bytes(lt))),
                    (lt, false) => Some(format!("cuBLASLt {}/thread", mib_or_bytes(lt))),
                };
                [cublas, lt]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let zero_grad = match r.zero_grad {
            gpumem::mlp::ZeroGrad::Zero => "zeroes",
            gpumem::mlp::ZeroGrad::SetToNone => "frees",
        };
        let loops = match r.optimizer_impl {
            gpumem::mlp::OptimizerImpl::ForLoop => "for-loop",
            gpumem::mlp::OptimizerImpl::Foreach => "foreach",
            gpumem::mlp::OptimizerImpl::Fused => "fused",
        };
        let temporaries = match r.foreach_denom {
            gpumem::mlp::ForeachDenom::OutOfPlace => "square roots, `denom`",
            gpumem::mlp::ForeachDenom::InPlace => "square roots",
        };
        writeln!(
            out,
            "| {} | {workspaces} | {zero_grad} | {loops} | {temporaries} | `{}` |",
            r.version,
            r.exception.rsplit('.').next().unwrap_or(r.exception)
        )?;
    }
    let today = KNOWN
        .iter()
        .find(|r| r.oom_message == gpumem::alloc::OomMessage::Current)
        .ok_or_else(|| anyhow!("no version words the message as today"))?;
    write!(
        out,
        "\nSizes before Hopper (compute capability 7.0); `--compute-capability` changes them. \
         `OutOfMemoryError` is `torch.cuda.OutOfMemoryError`, a subclass of `RuntimeError`. \
         The message has the lesson's wording before {v} and today's from {v} on \
         (`--oom-message`). Where each row comes from:\n\n",
        v = today.version
    )?;
    for r in KNOWN {
        writeln!(out, "- **{}**: {}", r.version, r.source)?;
    }
    Ok(out)
}
