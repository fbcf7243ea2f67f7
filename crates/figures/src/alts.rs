//! Every figure's alt text in one list: the charts' (`charts`) and the tensor timelines'
//! (`snapshots`), above both, for the page that lists them.

use crate::{charts, snapshots};
use anyhow::Result;

/// Every chart's file stem and alt text, in the order the book shows them.
pub fn alts() -> Result<Vec<(&'static str, String)>> {
    Ok(vec![
        ("memory_vs_batch", charts::batch::alt_memory_vs_batch()?),
        (
            "memory_vs_batch_log",
            charts::batch_log::alt_memory_vs_batch_log()?,
        ),
        (
            "memory_vs_batch_reserved",
            charts::batch::alt_memory_vs_batch_reserved()?,
        ),
        ("memory_vs_width", charts::width::alt_memory_vs_width()),
        ("memory_vs_depth", charts::depth::alt_memory_vs_depth()?),
        (
            "alloc_timeline",
            charts::timeline::ALT_ALLOC_TIMELINE.to_string(),
        ),
        ("leak_timeline", charts::timeline::alt_leak_timeline()?),
        (
            "step_tensor_timeline",
            snapshots::alt_step_tensor_timeline()?,
        ),
        (
            "fragmentation_tensor_timeline",
            snapshots::alt_fragmentation_tensor_timeline()?,
        ),
        ("challenge4_strategies", charts::strategies::alt(0)?),
        ("challenge4_deep", charts::strategies::alt(1)?),
        ("per_card", charts::per_card::alt_per_card()?),
    ])
}
