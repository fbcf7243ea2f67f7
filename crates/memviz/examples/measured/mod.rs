//! What the benchmarks share: each run in a fresh process of the same program, so that its
//! peak resident memory (`VmHWM`) is its own, and the one line that process reports back;
//! and where the made snapshot of a real run's size goes.

use anyhow::{Context, bail};
use memviz::synthetic::Shape;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first argument that makes the program the child: the rest are the run's.
const CHILD: &str = "--measure";
/// What starts the child's line of results.
const REPORT: &str = "MEASURED ";

/// The run's arguments, when this process is the child (checked before clap parses).
pub fn child_args() -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let is_child = args.first().is_some_and(|a| a == CHILD);
    is_child.then(|| args[1..].to_vec())
}

/// Runs this program again as the child with `args`, and returns the fields of its report.
pub fn in_fresh_process(
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
) -> anyhow::Result<Vec<String>> {
    let out = Command::new(std::env::current_exe()?)
        .arg(CHILD)
        .args(args)
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(line) = stdout.lines().find_map(|l| l.strip_prefix(REPORT)) else {
        bail!(
            "the run gave no result (status {}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    };
    Ok(line.split_whitespace().map(String::from).collect())
}

/// The child's report: `fields`, then its peak resident memory in KiB.
pub fn report(fields: &[String]) -> anyhow::Result<()> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let peak_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .context("no VmHWM in /proc/self/status")?;
    println!("{REPORT}{} {peak_kib}", fields.join(" "));
    Ok(())
}

/// Where the snapshot made for `shape` goes in `dir` (the same file for every benchmark).
pub fn snapshot_path(dir: &Path, shape: &Shape) -> PathBuf {
    dir.join(format!(
        "synthetic-{}-{}.pickle",
        shape.events, shape.leaked
    ))
}
