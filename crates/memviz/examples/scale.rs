//! The benchmark of issue 28: memviz on a snapshot of a real run's size.
//!
//! `cargo run --release -p memviz --example scale -- [FILE ...]` makes the 1,000,000-event,
//! 20,000-live snapshot ([`memviz::synthetic::Shape::REAL_RUN`], the same bytes every time),
//! then runs `memviz FILE --svg OUT --json` on it and on each FILE given (e.g. the leak
//! demo's, from `cargo run --release -p challenge3 -- --scenario leak --memory-snapshot
//! FILE`), each in a fresh process of its own so that its peak memory is its own, and
//! prints a table: the time, the peak resident memory (the child's `VmHWM`) and the SVG's
//! size. A benchmark, not a test: the numbers depend on the machine.

mod measured;

use anyhow::Context;
use clap::Parser;
use memviz::synthetic::{self, Shape};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// memviz at the size of a real run: time and peak memory of reading, summarising and
/// drawing a snapshot.
#[derive(Debug, Parser)]
struct Cli {
    /// More snapshots to measure (e.g. the leak demo's --memory-snapshot).
    files: Vec<PathBuf>,
    /// Trace entries in the made snapshot.
    #[arg(long, default_value_t = Shape::REAL_RUN.events)]
    events: usize,
    /// Tensors never freed in the made snapshot (alive at the end).
    #[arg(long, default_value_t = Shape::REAL_RUN.leaked)]
    leaked: usize,
    /// Where the made snapshot and the SVGs go.
    #[arg(long, default_value = "target/memviz-scale")]
    dir: PathBuf,
    /// More arguments for memviz (e.g. "--max-shapes 2000").
    #[arg(long, allow_hyphen_values = true, default_value = "")]
    memviz_args: String,
}

fn main() -> anyhow::Result<()> {
    // The child's mode, before clap: its arguments are memviz's.
    if let Some(args) = measured::child_args() {
        return measure(args);
    }
    let cli = Cli::parse();
    std::fs::create_dir_all(&cli.dir)
        .with_context(|| format!("cannot make {}", cli.dir.display()))?;
    let shape = Shape {
        events: cli.events,
        leaked: cli.leaked,
        ..Shape::REAL_RUN
    };
    let made_path = measured::snapshot_path(&cli.dir, &shape);
    let t = Instant::now();
    let made = synthetic::write(&made_path, &shape)
        .with_context(|| format!("cannot write {}", made_path.display()))?;
    println!(
        "made {}: {} events, {} tensors alive at the end, {} segments, {:.1} MB, in {:.1} s",
        made_path.display(),
        made.events,
        made.live,
        made.segments,
        made.file_bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let mut files = vec![made_path];
    files.extend(cli.files);
    let extra: Vec<&str> = cli.memviz_args.split_whitespace().collect();
    println!(
        "\n{:<44} {:>9} {:>8} {:>9} {:>13} {:>9}",
        "file", "events", "MB", "time s", "peak RSS MB", "SVG KB"
    );
    for file in &files {
        let row = child(file, &cli.dir, &extra);
        let name = file.file_name().map_or("".into(), |n| n.to_string_lossy());
        match row {
            Ok(r) => println!(
                "{name:<44} {:>9} {:>8.1} {:>9.2} {:>13.0} {:>9.0}",
                r.events,
                std::fs::metadata(file).map_or(0, |m| m.len()) as f64 / 1e6,
                r.secs,
                r.peak_kib as f64 / 1024.0,
                r.svg_bytes as f64 / 1024.0
            ),
            Err(e) => println!("{name:<44} failed: {e:#}"),
        }
    }
    Ok(())
}

#[derive(Debug)]
struct Row {
    events: u64,
    secs: f64,
    peak_kib: u64,
    svg_bytes: u64,
}

/// Runs this program again on `file` in `--measure` mode and reads its one line back.
fn child(file: &Path, dir: &Path, extra: &[&str]) -> anyhow::Result<Row> {
    let svg = dir.join(format!(
        "{}.svg",
        file.file_stem()
            .map_or("out".into(), |n| n.to_string_lossy())
    ));
    let args = [
        file.as_os_str(),
        "--svg".as_ref(),
        svg.as_os_str(),
        "--json".as_ref(),
    ];
    let extra = extra.iter().map(|a| a.as_ref());
    let v: Vec<f64> = measured::in_fresh_process(args.into_iter().chain(extra))?
        .iter()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    Ok(Row {
        events: v.first().copied().unwrap_or(0.0) as u64,
        secs: v.get(1).copied().unwrap_or(0.0),
        peak_kib: v.get(2).copied().unwrap_or(0.0) as u64,
        svg_bytes: std::fs::metadata(&svg).map_or(0, |m| m.len()),
    })
}

/// The child: one memviz run, then its report: events, seconds (and the peak).
fn measure(args: Vec<String>) -> anyhow::Result<()> {
    let t = Instant::now();
    let out = memviz::run(std::iter::once("memviz".to_string()).chain(args))?;
    let secs = t.elapsed().as_secs_f64();
    let json: serde_json::Value = serde_json::from_str(&out)?;
    let events: u64 = json["devices"]
        .as_array()
        .map_or(0, |d| d.iter().filter_map(|d| d["events"].as_u64()).sum());
    measured::report(&[events.to_string(), format!("{secs:.3}")])
}
