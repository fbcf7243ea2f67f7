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
        return "none".into();
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

/// Inline: how much smaller that is than on the ideal card, in percent.
pub fn largest_batch_drop() -> Result<String> {
    let (ideal, lesson) = (largest(Card::Ideal)?, largest(Card::Lesson)?);
    Ok(format!(
        "{:.0} %",
        100.0 * (ideal - lesson) as f64 / ideal as f64
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

/// The lesson's card one row past its largest batch: its peaks at the largest batch, and
/// how one row more fails, from the allocator's trace and blocks at the failure.
pub fn lesson_card_one_row_more() -> Result<String> {
    let best = data::largest_batch_on(Card::Lesson, LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the lesson's card"))?;
    let rows = best.rows + 1;
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let f = crate::fragmented::fragmented_step_on(Card::Lesson, &config, rows, false)?
        .ok_or_else(|| anyhow!("{rows} rows on the lesson's card fail with no cut segment"))?;
    // What the sentences here and on the page claim, checked: at the largest batch the
    // step reserves a whole activation more than it allocates; one row more is short of a
    // cut segment.
    let activation = best.rows * LESSON_WIDTH * 4;
    anyhow::ensure!(
        10 * (best.step.peak_reserved - best.step.peak_allocated) >= 9 * activation,
        "the lesson's card no longer reserves a whole activation more than it allocates"
    );
    let cut_bytes: u64 = f.cut_by.iter().map(|c| c.bytes).sum();
    anyhow::ensure!(
        f.oom.cached_unused() < f.oom.requested
            && 2 * (f.segment - cut_bytes) > f.oom.cached_unused(),
        "the lesson's card's boundary is no longer a cut segment short of the request"
    );
    let cut: Vec<String> = f
        .cut_by
        .iter()
        .map(|c| {
            format!(
                "`{}` ({}, made in step {})",
                c.label,
                format_bytes(c.bytes),
                c.made_in_step
            )
        })
        .collect();
    let free = f.oom.free.map_or(String::new(), |b| {
        format!(" The card has {} free, ", format_bytes(b))
    });
    Ok(format!(
        "At its largest batch, {} rows, the step peaks at {} allocated but {} reserved: with \
         the {} outside the allocator, the whole card. One row more runs out in step {}, in the \
         {}, allocating `{}` ({}). The cache holds {} unused, a little less than the request, most of \
         it in the {} segment first made for `{}`, which {} cut.{free}too little for one more \
         segment of that size.\n",
        grouped(best.rows),
        format_bytes(best.step.peak_allocated),
        format_bytes(best.step.peak_reserved),
        lesson_outside()?,
        f.step,
        f.pass,
        f.oom.label,
        format_bytes(f.oom.requested),
        format_bytes(f.oom.cached_unused()),
        format_bytes(f.segment),
        f.made_for,
        cut.join(" and "),
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
/// only its workspaces.
pub fn lesson_card_parts() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let largest_with = |outside: bool, workspaces: bool| -> Result<String> {
        let mut options = planning_on(Card::Lesson);
        if !outside {
            options.allocator.context_memory = 0;
        }
        if !workspaces {
            options.cublas = gpumem::cublas::WorkspaceRules::NONE;
        }
        let search = gpumem::measure::largest_batch(&options, &config, FULL)?;
        Ok(grouped(
            search.best.ok_or_else(|| anyhow!("no batch fits"))?,
        ))
    };
    Ok(format!(
        "With only the {} outside the allocator the largest batch is {} rows; with only the \
         workspaces, {} rows.",
        lesson_outside()?,
        largest_with(true, false)?,
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

/// Inline: what the lesson's card's workspaces add up to at most (both threads' cuBLAS
/// workspaces and one cuBLASLt call's).
pub fn lesson_card_workspaces_total() -> Result<String> {
    let w = Card::Lesson.workspaces();
    Ok(format_bytes(2 * w.cublas + w.lt))
}

/// Inline: the lesson's card's memory outside the allocator, as the lesson prints sizes.
pub fn lesson_outside() -> Result<String> {
    let h = gpumem::lesson::lesson_figures()
        .and_then(|l| l.outside())
        .map_err(|e| anyhow!(e))?;
    Ok(gpumem::lesson::hundredths_text(h))
}

/// Inline: one cuBLAS workspace of the lesson's card (`8.12 MiB`).
pub fn lesson_cublas_workspace() -> Result<String> {
    Ok(format_bytes(Card::Lesson.workspaces().cublas))
}
