//! `memory_summary()` line for line as `torch/cuda/memory.py` prints it: the same rules,
//! row names, widths and unit choices, so a learner can hold the two tables side by side.
//! Every row PyTorch prints has a counterpart here (`active_*` equals `allocated_*`: the
//! engine has no streams that keep a freed block busy).

use crate::alloc::{MemoryStats, PoolStat, Stat};
use std::fmt::Write;

/// The title PyTorch prints for device 0; [`summary_table`] with it gives PyTorch's table.
pub const PYTORCH_TITLE: &str = "PyTorch CUDA memory summary, device ID 0";

/// Width of the table between its `|` borders.
const WIDTH: usize = 75;

/// `_format_size`: the unit is chosen by the `all` row's value of the same column (`pref`),
/// moving up while that value is at least 768 of the current unit; the value is floored.
fn format_size(size: u64, pref: u64) -> String {
    const PREFIXES: [&str; 6] = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let (mut size, mut pref) = (size, pref as f64);
    let mut prefix = PREFIXES[0];
    for next in &PREFIXES[1..] {
        if pref < 768.0 * 1024.0 {
            break;
        }
        prefix = next;
        size /= 1024;
        pref /= 1024.0;
    }
    format!("{size:6} {prefix}")
}

/// `_format_count`: the same with 1000s, moving up from 750 000.
fn format_count(count: u64, pref: u64) -> String {
    const PREFIXES: [&str; 3] = [" ", "K", "M"];
    let (mut count, mut pref) = (count, pref as f64);
    let mut prefix = PREFIXES[0];
    for next in &PREFIXES[1..] {
        if pref < 750.0 * 1000.0 {
            break;
        }
        prefix = next;
        count /= 1000;
        pref /= 1000.0;
    }
    format!("{count:7} {prefix} ")
}

type Format = fn(u64, u64) -> String;

/// One row: the figures of `s` in units chosen by `pref` (the `all` row).
fn row(lines: &mut Vec<String>, name: &str, s: &Stat, pref: &Stat, fmt: Format) {
    lines.push(format!(
        " {name:<21} | {} | {} | {} | {} ",
        fmt(s.current, pref.current),
        fmt(s.peak, pref.peak),
        fmt(s.allocated, pref.allocated),
        fmt(s.freed, pref.freed),
    ));
}

/// The rows split by pool, in PyTorch's order and with its names.
fn pooled(stats: &MemoryStats) -> [(&'static str, &PoolStat, Format); 9] {
    [
        ("Allocated memory", &stats.allocated_bytes, format_size),
        ("Active memory", &stats.active_bytes, format_size),
        ("Requested memory", &stats.requested_bytes, format_size),
        ("GPU reserved memory", &stats.reserved_bytes, format_size),
        (
            "Non-releasable memory",
            &stats.inactive_split_bytes,
            format_size,
        ),
        ("Allocations", &stats.allocation, format_count),
        ("Active allocs", &stats.active, format_count),
        ("GPU reserved segments", &stats.segment, format_count),
        ("Non-releasable allocs", &stats.inactive_split, format_count),
    ]
}

/// `torch.cuda.memory_summary(abbreviated=…)` for `stats`, with `title` where PyTorch writes
/// "PyTorch CUDA memory summary, device ID 0" (pass [`PYTORCH_TITLE`] for PyTorch's table).
pub fn summary_table(title: &str, stats: &MemoryStats, abbreviated: bool) -> String {
    let mut lines = vec![
        "=".repeat(WIDTH),
        format!(" {:16} {title:<56} ", ""),
        "-".repeat(WIDTH),
        format!(
            "  {:9} CUDA OOMs: {:<12} | {:6} cudaMalloc retries: {:<8}  ",
            "", stats.num_ooms, "", stats.num_alloc_retries
        ),
        "=".repeat(WIDTH),
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ".to_string(),
    ];
    for (name, s, fmt) in pooled(stats) {
        lines.push("-".repeat(WIDTH));
        row(&mut lines, name, &s.all, &s.all, fmt);
        if !abbreviated {
            row(
                &mut lines,
                "      from large pool",
                &s.large_pool,
                &s.all,
                fmt,
            );
            row(
                &mut lines,
                "      from small pool",
                &s.small_pool,
                &s.all,
                fmt,
            );
        }
    }
    for (name, s) in [
        ("Oversize allocations", &stats.oversize_allocations),
        ("Oversize GPU segments", &stats.oversize_segments),
    ] {
        lines.push("-".repeat(WIDTH));
        row(&mut lines, name, s, s, format_count);
    }
    lines.push("=".repeat(WIDTH));
    let mut out = String::new();
    for line in lines {
        let _ = writeln!(out, "|{line}|");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_pytorchs_thresholds() {
        // Bytes up to 768 KiB, then KiB up to 768 MiB, …, floored, chosen by `pref`.
        assert_eq!(format_size(786_431, 786_431), "786431 B  ");
        assert_eq!(format_size(786_432, 786_432), "   768 KiB");
        assert_eq!(format_size(20 << 20, 20 << 20), " 20480 KiB");
        assert_eq!(format_size(768 << 20, 768 << 20), "   768 MiB");
        assert_eq!(format_size(1023, 3 << 30), "     0 MiB");
        assert_eq!(format_size(1 << 40, 768 << 30), "  1024 GiB");
        assert_eq!(format_count(749_999, 749_999), " 749999   ");
        assert_eq!(format_count(750_000, 750_000), "    750 K ");
        assert_eq!(format_count(12, 2_000_000_000), "      0 M ");
    }

    #[test]
    fn every_line_is_pytorchs_width() {
        let s = summary_table(PYTORCH_TITLE, &MemoryStats::default(), false);
        assert_eq!(s.lines().count(), 2 + 4 + 9 * 4 + 2 * 2 + 1);
        assert!(s.lines().all(|l| l.chars().count() == WIDTH + 2), "{s}");
        let short = summary_table(PYTORCH_TITLE, &MemoryStats::default(), true);
        assert_eq!(short.lines().count(), 2 + 4 + 9 * 2 + 2 * 2 + 1);
    }
}
