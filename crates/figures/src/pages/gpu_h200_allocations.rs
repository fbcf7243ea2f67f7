//! The recorder's recordings against the H200's own snapshots of the same steps, allocation by
//! allocation (`memviz::against`): how many allocations each holds, whether the recording's
//! are the card's in the card's order, and what the card allocated in a kernel the recording
//! lists as approximate.

use super::gpu_h200::snapshots_dir;
use super::own_model::recorded_dir;
use anyhow::{Context, Result};
use charts::style::grouped;
use gpumem::snapshot::Snapshot;
use std::fmt::Write as _;

/// The table, one row per model the card ran.
pub fn table() -> Result<String> {
    let mut out = String::from(
        "| model | allocations: card | recording | in the card's order | approximate, on the \
         card |\n|---|---:|---:|---|---|\n",
    );
    let mut names: Vec<String> = std::fs::read_dir(snapshots_dir())?
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".pickle")?.to_string();
            recorded_dir().join(&name).exists().then_some(stem)
        })
        .collect();
    names.sort();
    let (mut same, mut n) = (0, 0);
    for name in &names {
        let rec = Snapshot::read(&recorded_dir().join(format!("{name}.pickle")))?;
        let r = rec.recorder.clone().context("not a recording")?;
        let card = Snapshot::read(&snapshots_dir().join(format!("{name}.pickle")))?;
        let a = memviz::against::against(&rec, &r, &card);
        let approx = if a.approximate.is_empty() {
            "none".to_string()
        } else {
            format!(
                "{} ({} B)",
                a.approximate.len(),
                grouped(a.approximate.iter().sum::<i64>() as u64)
            )
        };
        n += 1;
        same += usize::from(a.same_order());
        writeln!(
            out,
            "| `{name}` | {} | {} | {} | {approx} |",
            a.card.len() + a.approximate.len(),
            a.recorded.len(),
            if a.same_order() { "yes" } else { "no" },
        )?;
    }
    writeln!(
        out,
        "\n{same} of {n} recordings hold every allocation the card made, in the card's order, \
         but the cuBLAS workspaces (the replay adds them) and what they list as approximate \
         (the last column: allocations the card made in those kernels, and their bytes). \
         The card's allocations are read from its snapshots (`torch.cuda.memory._dump_snapshot`, \
         C++ frames included); `cargo test -p memviz --test gpu_h200_kernels` holds the same."
    )?;
    Ok(out)
}
