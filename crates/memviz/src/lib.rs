//! `memviz`: the way back from PyTorch. It reads a memory snapshot — one PyTorch wrote with
//! `torch.cuda.memory._dump_snapshot()` on a real GPU, or one a demo of this book wrote with
//! `--memory-snapshot` — and prints its summary (segments; allocated, reserved and active at
//! the dump; the peaks over the recorded trace; the largest blocks, named), the state at the
//! peak (its largest tensors, with their stacks), the segment view (each segment's blocks in
//! use, at the dump or at any trace entry), and draws the per-tensor timeline as an SVG,
//! offline: PyTorch's own HTML viewer loads its code from a CDN. A real run's snapshot (a
//! million trace entries, tens of thousands of live tensors) reads and draws in seconds and
//! under a gigabyte: the drawing is bounded (`--max-shapes`, as PyTorch's viewer bounds its
//! own) and says what it summarised.
//!
//! [`run`] is the whole command, so that its tests and the book can run it as a library;
//! [`synthetic`] makes a snapshot of a real run's size for the benchmark and the tests.

pub mod against;
pub mod replay;
pub mod synthetic;
mod text;
pub mod views;

use anyhow::{Context, bail};
use charts::tensor_timeline::{self, Bounds, TensorTimelineChart};
use clap::{Parser, Subcommand};
use gpumem::size::format_bytes;
use gpumem::snapshot::{Snapshot, Summary, Timeline};
use serde_json::json;
use std::ffi::OsString;
use std::path::PathBuf;

/// Read a memory snapshot (PyTorch's `torch.cuda.memory._dump_snapshot("file.pickle")`, or a
/// demo's `--memory-snapshot`) offline: view it, or replay its trace on another card.
/// `memviz FILE …` is `memviz view FILE …`.
#[derive(Debug, Parser)]
#[command(
    name = "memviz",
    version,
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Memviz {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    View(Cli),
    Replay(replay::Cli),
}

/// The subcommands' names, and what clap answers itself: anything else in the first place
/// is a snapshot (or a flag) for `view`, as `memviz FILE` read before the subcommands.
const NOT_A_VIEW: [&str; 7] = ["view", "replay", "help", "-h", "--help", "-V", "--version"];

/// Read a memory snapshot (PyTorch's `torch.cuda.memory._dump_snapshot("file.pickle")`, or a
/// demo's `--memory-snapshot`): print its summary, the state at the peak and the segments,
/// and draw its per-tensor timeline.
#[derive(Debug, clap::Args)]
struct Cli {
    /// The snapshot: a pickle of the dict `torch.cuda.memory._snapshot()` returns.
    file: PathBuf,
    /// Also draw the per-tensor timeline (each live tensor a band, like memory_viz's
    /// "Active Memory Timeline") into this SVG file.
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
    /// The device to report (default: every device with segments or a trace; the timeline,
    /// the peak and the segment view are of the first of them).
    #[arg(long, value_name = "N")]
    device: Option<i64>,
    /// The first trace entry of the window the timeline and the peak look at.
    #[arg(long, value_name = "ENTRY", default_value_t = 0)]
    from: usize,
    /// The end of that window (default: the last entry).
    #[arg(long, value_name = "ENTRY")]
    to: Option<usize>,
    /// Shapes the timeline draws at most: the largest tensors alive at the peak, then the
    /// largest of the rest; the others are summarised as one grey band (PyTorch's viewer
    /// draws 15,000 allocations).
    #[arg(long, value_name = "N", default_value_t = tensor_timeline::MAX_SHAPES)]
    max_shapes: usize,
    /// How many of the largest blocks at the dump, tensors at the peak and segments to list.
    #[arg(long, value_name = "N", default_value = "8")]
    largest: usize,
    /// Stack frames printed per tensor at the peak (--json has them all).
    #[arg(long, value_name = "N", default_value = "3")]
    frames: usize,
    /// The segment view after this many trace entries, replayed from the dump back through
    /// the trace (default: at the dump).
    #[arg(long, value_name = "ENTRY")]
    segments_at: Option<usize>,
    /// Print one JSON document instead of text: every figure, the peak's tensors with all
    /// their frames, every segment with its blocks in use.
    #[arg(long)]
    json: bool,
}

/// What is reported of the device the views look at.
#[derive(Debug)]
struct Views {
    device: i64,
    window: (usize, usize),
    peak: views::PeakState,
    segments: Vec<views::SegmentView>,
    segments_at: Option<usize>,
    drawn: Option<Drawn>,
}

/// The timeline as drawn.
#[derive(Debug)]
struct Drawn {
    path: PathBuf,
    layout_alive: usize,
    bands: usize,
    summarised: usize,
    per_column: usize,
}

/// Runs the command with `args`, the program's name first; returns what it prints.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<String> {
    Ok(answer(args)?.text)
}

/// What memviz prints, and whether a replay found that the step does not fit (its own exit
/// status, [`DOES_NOT_FIT`], so that a script can branch on it).
#[derive(Debug)]
pub struct Answer {
    pub text: String,
    pub does_not_fit: bool,
}

/// The exit status of `memviz replay` when the step does not fit the card.
pub use gpumem_replay::DOES_NOT_FIT;

/// [`run`], with whether a replay found that the step does not fit.
pub fn answer(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
) -> anyhow::Result<Answer> {
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args
        .get(1)
        .is_some_and(|a| !NOT_A_VIEW.iter().any(|n| a == n))
    {
        args.insert(1, "view".into());
    }
    match Memviz::try_parse_from(args)?.command {
        Command::View(cli) => Ok(Answer {
            text: view(&cli)?,
            does_not_fit: false,
        }),
        Command::Replay(cli) => {
            let (text, fits) = replay::answer(&cli)?;
            Ok(Answer {
                text,
                does_not_fit: !fits,
            })
        }
    }
}

/// `memviz view`: the summary, the views, the drawing.
fn view(cli: &Cli) -> anyhow::Result<String> {
    let bar = cli::progress(0, "reading", cli::Output::new(cli.json));
    let snap = Snapshot::read_with_progress(&cli.file, &mut |at, total| {
        bar.set_length(total);
        bar.set_position(at);
    })?;
    bar.finish_and_clear();
    let devices = match cli.device {
        Some(d) if snap.devices().contains(&d) => vec![d],
        Some(d) => bail!(
            "device {d} has no segments and no trace in {} (devices with data: {:?})",
            cli.file.display(),
            snap.devices()
        ),
        None => snap.devices(),
    };
    let mut first: Option<Timeline> = None;
    let mut summaries: Vec<Summary> = Vec::new();
    for &d in &devices {
        let t = snap.timeline(d);
        summaries.push(snap.summary_of(d, cli.largest, &t));
        first.get_or_insert(t);
    }
    let problems = snap.problems();
    if cli.svg.is_some() && first.is_none() {
        bail!("the snapshot has no segments and no trace: nothing to draw");
    }
    let views = match (first, devices.first()) {
        (Some(t), Some(&d)) => Some(views_of(cli, &snap, d, &t)?),
        _ => None,
    };
    if cli.json {
        return Ok(serde_json::to_string_pretty(&json!({
            "file": cli.file,
            "devices": summaries,
            "problems": problems,
            "allocator_settings": snap.allocator_settings,
            "device_viewed": views.as_ref().map(|v| v.device),
            "window": views.as_ref().map(|v| v.window),
            "peak": views.as_ref().map(|v| &v.peak),
            "segments_at": views.as_ref().map(|v| v.segments_at),
            "segments": views.as_ref().map(|v| &v.segments),
            "timeline": views.as_ref().and_then(|v| v.drawn.as_ref()).map(|d| json!({
                "svg": d.path, "bands": d.bands, "alive": d.layout_alive,
                "summarised": d.summarised, "entries_per_column": d.per_column,
                "from": views.as_ref().map_or(0, |v| v.window.0),
                "to": views.as_ref().map_or(0, |v| v.window.1),
            })),
        }))?);
    }
    Ok(text::report(cli, &summaries, &problems, views.as_ref()))
}

/// The peak, the segments and the drawing of device `d`.
fn views_of(cli: &Cli, snap: &Snapshot, d: i64, t: &Timeline) -> anyhow::Result<Views> {
    let to = cli.to.unwrap_or(t.steps);
    if cli.from > to || to > t.steps {
        bail!(
            "the window --from {} --to {to} is not within the trace of device {d}, entries 0 \
             to {}",
            cli.from,
            t.steps
        );
    }
    if let Some(at) = cli.segments_at.filter(|&a| a > t.steps) {
        bail!(
            "--segments-at {at} is past the trace of device {d}, which has {} entries",
            t.steps
        );
    }
    let window = (cli.from, to);
    let drawn = match &cli.svg {
        Some(out) => Some(draw(cli, d, t, window, out)?),
        None => None,
    };
    Ok(Views {
        device: d,
        window,
        peak: views::peak_state(t, window, cli.largest),
        segments: views::segments_at(snap, d, cli.segments_at),
        segments_at: cli.segments_at,
        drawn,
    })
}

/// Draws device `d`'s timeline over `window` into `out`.
fn draw(
    cli: &Cli,
    d: i64,
    t: &Timeline,
    window: (usize, usize),
    out: &std::path::Path,
) -> anyhow::Result<Drawn> {
    let l = tensor_timeline::layout(
        t,
        Bounds {
            window,
            max_shapes: cli.max_shapes,
        },
    );
    let (from, to) = l.window;
    let name = cli
        .file
        .file_name()
        .map_or("".into(), |n| n.to_string_lossy());
    let left_out = if l.summarised > 0 {
        format!(
            " The {} largest of {} tensors are drawn (the largest alive at the peak first); \
             the other {} are one grey band on top.",
            l.placed.len(),
            l.alive,
            l.summarised
        )
    } else {
        String::new()
    };
    let alt = format!(
        "Per-tensor timeline of {name}, device {d}: each of {} tensors is a band, stacked in \
         the order they were allocated over trace entries {from} to {to}; live tensors peak \
         at {} of requested bytes after entry {}.{left_out}",
        l.placed.len(),
        format_bytes(l.peak.1),
        l.peak.0
    );
    let title = format!("{name}: live tensors, device {d}");
    let chart = TensorTimelineChart {
        timeline: t,
        capacity: None,
        title: &title,
        alt: &alt,
    };
    let svg = tensor_timeline::render(&chart, &l)?;
    std::fs::write(out, svg)
        .with_context(|| format!("cannot write the timeline to {}", out.display()))?;
    Ok(Drawn {
        path: out.to_path_buf(),
        layout_alive: l.alive,
        bands: l.placed.len(),
        summarised: l.summarised,
        per_column: l.per_column,
    })
}
