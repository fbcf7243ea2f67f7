//! `memviz`: the way back from PyTorch. It reads a memory snapshot — one PyTorch wrote with
//! `torch.cuda.memory._dump_snapshot()` on a real GPU, or one a demo of this book wrote with
//! `--memory-snapshot` — and prints its summary (segments; allocated, reserved and active at
//! the dump; the peaks over the recorded trace; the largest blocks, named), and draws the
//! per-tensor timeline as an SVG, offline: PyTorch's own HTML viewer loads its code from a
//! CDN.
//!
//! [`run`] is the whole command, so that its tests and the book can run it as a library;
//! [`synthetic`] makes a snapshot of a real run's size for the benchmark and the tests.

pub mod synthetic;

use anyhow::{Context, bail};
use charts::tensor_timeline::{self, TensorTimelineChart};
use clap::Parser;
use gpumem::size::format_bytes;
use gpumem::snapshot::{Snapshot, Summary};
use serde_json::json;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Read a memory snapshot (PyTorch's `torch.cuda.memory._dump_snapshot("file.pickle")`, or a
/// demo's `--memory-snapshot`): print its summary and draw its per-tensor timeline.
#[derive(Debug, Parser)]
#[command(name = "memviz", version)]
struct Cli {
    /// The snapshot: a pickle of the dict `torch.cuda.memory._snapshot()` returns.
    file: PathBuf,
    /// Also draw the per-tensor timeline (each live tensor a band, like memory_viz's
    /// "Active Memory Timeline") into this SVG file.
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
    /// The device to report (default: every device with segments or a trace; the timeline
    /// draws the first of them).
    #[arg(long, value_name = "N")]
    device: Option<i64>,
    /// How many of the largest blocks at the dump to name.
    #[arg(long, value_name = "N", default_value = "8")]
    largest: usize,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs the command with `args`, the program's name first; returns what it prints.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<String> {
    let cli = Cli::try_parse_from(args)?;
    let snap = Snapshot::read(&cli.file)?;
    let devices = match cli.device {
        Some(d) if snap.devices().contains(&d) => vec![d],
        Some(d) => bail!(
            "device {d} has no segments and no trace in {} (devices with data: {:?})",
            cli.file.display(),
            snap.devices()
        ),
        None => snap.devices(),
    };
    let summaries: Vec<Summary> = devices
        .iter()
        .map(|&d| snap.summary(d, cli.largest))
        .collect();
    let problems = snap.problems();
    let drawn = match (&cli.svg, devices.first()) {
        (Some(out), Some(&d)) => Some(draw(&snap, d, &cli.file, out)?),
        (Some(_), None) => bail!("the snapshot has no segments and no trace: nothing to draw"),
        (None, _) => None,
    };
    if cli.json {
        return Ok(serde_json::to_string_pretty(&json!({
            "file": cli.file,
            "devices": summaries,
            "problems": problems,
            "allocator_settings": snap.allocator_settings,
            "timeline": drawn.as_ref().map(|d| json!({"svg": d.0, "bands": d.1, "from": d.2, "to": d.3})),
        }))?);
    }
    let mut out = format!("memviz — {}\n", cli.file.display());
    if summaries.is_empty() {
        out.push_str("the snapshot has no segments and no trace\n");
    }
    for s in &summaries {
        out.push_str(&text(s));
    }
    for p in &problems {
        out.push_str(&format!("warning: {p}\n"));
    }
    if let Some((path, bands, from, to)) = drawn {
        out.push_str(&format!(
            "\nper-tensor timeline of device {}: {} ({bands} tensors, trace entries {from} to {to})\n",
            devices[0],
            path.display()
        ));
    }
    Ok(out)
}

/// One device's summary as text.
fn text(s: &Summary) -> String {
    let mut out = format!(
        "\ndevice {}: {} segment(s), {} trace entries\n",
        s.device, s.segments, s.events
    );
    out.push_str(&format!(
        "at the dump:    reserved {}, allocated {}, active {}, requested {}\n",
        format_bytes(s.reserved),
        format_bytes(s.allocated),
        format_bytes(s.active),
        format_bytes(s.requested)
    ));
    if s.events > 0 {
        out.push_str(&format!(
            "over the trace: peak reserved {}, peak requested in live tensors {}\n",
            format_bytes(s.peak_reserved),
            format_bytes(s.peak_requested)
        ));
    }
    for (size, free) in &s.ooms {
        out.push_str(&format!(
            "out of memory:  a request of {} failed with {} free on the device\n",
            format_bytes(*size),
            format_bytes(*free)
        ));
    }
    if !s.largest.is_empty() {
        out.push_str("largest blocks at the dump:\n");
        for (name, bytes, addr) in &s.largest {
            out.push_str(&format!(
                "  {:>12}  {addr:#x}  {name}\n",
                format_bytes(*bytes)
            ));
        }
    }
    out
}

/// Draws device `d`'s timeline into `out`: the path, the bands drawn, the entries shown.
fn draw(
    snap: &Snapshot,
    d: i64,
    file: &Path,
    out: &Path,
) -> anyhow::Result<(PathBuf, usize, usize, usize)> {
    let t = snap.timeline(d);
    let (from, to) = tensor_timeline::window(&t);
    let name = file.file_name().map_or("".into(), |n| n.to_string_lossy());
    let peak = t.requested.iter().copied().max().unwrap_or(0);
    let alt = format!(
        "Per-tensor timeline of {name}, device {d}: each of {} tensors is a band, stacked in \
         the order they were allocated over trace entries {from} to {to}; live tensors peak \
         at {} of requested bytes.",
        t.bands.len(),
        format_bytes(peak)
    );
    let title = format!("{name}: live tensors, device {d}");
    let svg = tensor_timeline::tensor_timeline_svg(&TensorTimelineChart {
        timeline: &t,
        capacity: None,
        title: &title,
        alt: &alt,
    })?;
    std::fs::write(out, svg)
        .with_context(|| format!("cannot write the timeline to {}", out.display()))?;
    let bands = tensor_timeline::stack(&t, (from, to)).len();
    Ok((out.to_path_buf(), bands, from, to))
}
