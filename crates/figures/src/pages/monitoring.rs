//! Monitoring memory (`monitoring.md`): the full batch's out-of-memory message, allocated vs
//! reserved.

use crate::data::{self};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::size::format_bytes;

use super::{full_batch_error, text_block};

/// Challenge 1's out-of-memory message alone, as a text block.
pub fn full_batch_oom() -> Result<String> {
    Ok(text_block(full_batch_error()?))
}

/// `memory_allocated()` when the full batch ran out, e.g. `8.75 GiB`.
pub fn full_batch_allocated() -> Result<String> {
    Ok(format_bytes(full_batch_error()?.allocated))
}

/// The free bytes the full batch's message reports (capacity − reserved on the card).
pub fn full_batch_free() -> Result<String> {
    let free = full_batch_error()?
        .free
        .ok_or_else(|| anyhow!("the emulated card reports no free bytes"))?;
    Ok(format_bytes(free))
}

/// `memory_reserved()` when the full batch ran out.
pub fn full_batch_reserved() -> Result<String> {
    Ok(format_bytes(full_batch_error()?.reserved))
}

/// The first batch whose step needs a third segment the size of an activation.
pub fn reserved_jump_batch() -> Result<String> {
    Ok(grouped(data::reserved_jump_batch()?))
}

/// The two commands that show the jump: one row below it, and at it.
pub fn reserved_jump_commands() -> Result<String> {
    let jump = data::reserved_jump_batch()?;
    Ok(format!(
        "```sh\n\
         cargo run -p challenge1 -- --backend plan --batch {}\n\
         cargo run -p challenge1 -- --backend plan --batch {jump}\n\
         ```\n",
        jump - 1
    ))
}
