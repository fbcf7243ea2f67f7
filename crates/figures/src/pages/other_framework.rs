//! Inside the caching allocator (`allocator.md`): reading an out-of-memory message that is not PyTorch's — the one the
//! older field report (seed 004) quotes from its framework — with its byte counts converted by
//! the engine's own formatter.

use anyhow::Result;
use gpumem::size::format_bytes;

/// The message as the field report quotes it (an input: a quotation, not a measurement).
pub const MESSAGE: &str = "Error allocating 86118400 bytes of device memory (out of memory). \
                           Driver report 32735232 bytes free and 4294770688 bytes total.";
/// Its three figures, as quoted.
const REQUESTED: u64 = 86_118_400;
const FREE: u64 = 32_735_232;
const TOTAL: u64 = 4_294_770_688;

/// The quotation, then each figure in PyTorch's units and what follows from them.
pub fn other_framework_message() -> Result<String> {
    let held = TOTAL - FREE;
    Ok(format!(
        "```text\n{MESSAGE}\n```\n\n\
         | in the message | bytes | as PyTorch prints it |\n\
         | :--- | ---: | ---: |\n\
         | asked for | {REQUESTED} | {} |\n\
         | free, says the driver | {FREE} | {} |\n\
         | total | {TOTAL} | {} |\n\
         | in use by someone: total − free | {held} | {} |\n\n\
         The request is {:.1} times what is free, on a card that is {:.1} % full. Unlike \
         PyTorch's, this message does not say how much of that the framework holds itself, or \
         how much of it sits unused in its own cache, so on its own it cannot tell a full card \
         from a fragmented one.\n",
        format_bytes(REQUESTED),
        format_bytes(FREE),
        format_bytes(TOTAL),
        format_bytes(held),
        REQUESTED as f64 / FREE as f64,
        100.0 * held as f64 / TOTAL as f64,
    ))
}
