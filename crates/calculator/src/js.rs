//! JavaScript's numbers are doubles: integers past 2^53 − 1 lose their last digits silently.
//! Every number the calculator answers is checked to be exact there; a setup whose sizes go
//! past it is refused with a message instead of being rounded on the page.

use serde::Serialize;
use serde_json::Value;

/// `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// `value` as JSON, or why the page could not show it exactly.
pub fn exact_json(value: &impl Serialize) -> Result<Value, String> {
    let json = serde_json::to_value(value).map_err(|e| format!("unprintable answer: {e}"))?;
    match largest_unsafe(&json) {
        None => Ok(json),
        Some(n) => Err(past_exact(n)),
    }
}

/// The message for a size or count past what a page's numbers hold.
pub fn past_exact(n: u64) -> String {
    past_exact_text(&n.to_string())
}

/// [`past_exact`] for a number as written.
pub fn past_exact_text(n: &str) -> String {
    format!(
        "a size of this setup ({n}) is past 2^53 − 1 = {MAX_SAFE_INTEGER}, the largest integer \
         JavaScript holds exactly: the calculator refuses it rather than round it (the engine \
         itself counts to 2^64; the demos take such setups)"
    )
}

fn largest_unsafe(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => match n.as_u64() {
            Some(u) if u > MAX_SAFE_INTEGER => Some(u),
            _ => None,
        },
        Value::Array(items) => items.iter().filter_map(largest_unsafe).max(),
        Value::Object(map) => map.values().filter_map(largest_unsafe).max(),
        _ => None,
    }
}
