//! Inside the caching allocator (`allocator.md`): allocated vs reserved — one row past the
//! largest batch that fits, the cache is fragmented. The out-of-memory message's section of
//! Monitoring memory (`monitoring.md`) is [`super::oom_message`].

use crate::data::LESSON_WIDTH;
use crate::fragmented::{Fragmented, fragmented_step};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;

use super::{largest_batch, text_block};

pub mod exception;
pub mod memtracker;
pub mod must_fit;

/// One row more than the largest batch that fits, and how its step fails.
pub fn one_row_more() -> Result<(u64, Fragmented)> {
    let rows = largest_batch()?.rows + 1;
    let failure = fragmented_step(&MlpConfig::lesson(LESSON_WIDTH), rows)?.ok_or_else(|| {
        anyhow!(
            "{rows} rows do not fail for a fragmented cache: the allocator page's section is moot"
        )
    })?;
    Ok((rows, failure))
}

/// The first batch that does not fit (rows), e.g. `655 361`.
pub fn one_row_more_batch() -> Result<String> {
    Ok(grouped(one_row_more()?.0))
}

/// Its out-of-memory message, as a text block.
pub fn one_row_more_oom() -> Result<String> {
    Ok(text_block(one_row_more()?.1.oom))
}

/// What happened, in words: the pass, the tensor, and what cut the block it needed.
pub fn one_row_more_story() -> Result<String> {
    let (rows, f) = one_row_more()?;
    Ok(story(rows, &f))
}

/// The story of a fragmented failure at `rows`, in words.
pub fn story(rows: u64, f: &Fragmented) -> String {
    let cut: Vec<String> = f
        .cut_by
        .iter()
        .map(|c| {
            let when = if c.twin_alive {
                format!(
                    ", made in step {} while the previous step's `{}` was still alive",
                    c.made_in_step, c.label
                )
            } else {
                format!(", made in step {}", c.made_in_step)
            };
            format!("`{}` ({}{when})", c.label, format_bytes(c.bytes))
        })
        .collect();
    format!(
        "At {} rows the step runs out in step {} of the measurement, in the {}, allocating \
         `{}`: it asks for {}, and the cache holds {} unused — more than the request. The block \
         it needed is the {} segment first made for `{}`; when the request came, {} lived inside \
         that segment, so the largest free piece of it was too small, and a segment with a live \
         block in it is not handed back when the allocator frees its cache and retries.\n",
        grouped(rows),
        f.step,
        f.pass,
        f.oom.label,
        format_bytes(f.oom.requested),
        format_bytes(f.oom.cached_unused()),
        format_bytes(f.segment),
        f.made_for,
        cut.join(" and "),
    )
}

/// The two commands that show it: the largest batch that fits, and one row more.
pub fn one_row_more_commands() -> Result<String> {
    Ok(boundary_commands("--backend plan", one_row_more()?.0 - 1))
}

/// Challenge 1 with `flags` at the largest batch that fits, `rows`, and at one row more.
pub fn boundary_commands(flags: &str, rows: u64) -> String {
    format!(
        "```sh\n\
         cargo run -p challenge1 -- {flags} --batch {rows}\n\
         cargo run -p challenge1 -- {flags} --batch {}\n\
         ```\n",
        rows + 1
    )
}
