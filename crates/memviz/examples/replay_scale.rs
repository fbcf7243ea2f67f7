//! The replay's benchmark (issue 37): `memviz replay` on a snapshot of a real run's size.
//!
//! `cargo run --release -p memviz --example replay_scale -- [--runs N] [FILE ...]` makes (or
//! reuses) the 1,000,000-entry snapshot of [`memviz::synthetic::Shape::REAL_RUN`], then
//! replays it — as recorded, on a 2 GiB card (out of memory on the way), with `expandable_segments:True` — and each
//! FILE given, each run in a fresh process so that its peak memory is its own, and prints a
//! table: the median time of N runs, the slowest, and the peak resident memory (`VmHWM`).
//! A benchmark, not a test: the numbers depend on the machine. The targets: ≤ 5 s, ≤ 1 GB.

mod measured;

use anyhow::Context;
use clap::Parser;
use memviz::synthetic::{self, Shape};
use std::path::PathBuf;
use std::time::Instant;

/// Time and peak memory of `memviz replay` on a snapshot of a real run's size.
#[derive(Debug, Parser)]
struct Cli {
    /// More snapshots to replay.
    files: Vec<PathBuf>,
    /// Runs per row (the median is printed).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Where the made snapshot goes (shared with the `scale` example).
    #[arg(long, default_value = "target/memviz-scale")]
    dir: PathBuf,
}

fn main() -> anyhow::Result<()> {
    if let Some(args) = measured::child_args() {
        return measure(&args);
    }
    let cli = Cli::parse();
    std::fs::create_dir_all(&cli.dir)?;
    let shape = Shape::REAL_RUN;
    let made = measured::snapshot_path(&cli.dir, &shape);
    if !made.exists() {
        synthetic::write(&made, &shape)
            .with_context(|| format!("cannot write {}", made.display()))?;
    }
    let m = made.display().to_string();
    let mut rows: Vec<(String, Vec<String>)> = vec![
        ("as recorded, ideal card".into(), vec![m.clone()]),
        (
            "--card 2GiB".into(),
            vec![m.clone(), "--card".into(), "2GiB".into()],
        ),
        (
            "expandable_segments:True".into(),
            vec![
                m.clone(),
                "--alloc-conf".into(),
                "expandable_segments:True".into(),
            ],
        ),
    ];
    for f in &cli.files {
        rows.push((f.display().to_string(), vec![f.display().to_string()]));
    }
    println!(
        "snapshot: {m} ({} trace entries); {} runs per row\n",
        shape.events, cli.runs
    );
    println!(
        "{:<28} {:>9} {:>6} {:>10} {:>10} {:>13}",
        "replay", "entries", "fits", "median s", "max s", "peak RSS MB"
    );
    for (name, args) in rows {
        let mut results = Vec::new();
        for _ in 0..cli.runs.max(1) {
            results.push(child(&args)?);
        }
        let mut secs: Vec<f64> = results.iter().map(|r| r.1).collect();
        secs.sort_by(f64::total_cmp);
        let rss = results.iter().map(|r| r.2).max().unwrap_or(0);
        println!(
            "{name:<28} {:>9} {:>6} {:>10.2} {:>10.2} {:>13.0}",
            results[0].0,
            results[0].3,
            secs[secs.len() / 2],
            secs[secs.len() - 1],
            rss as f64 / 1024.0
        );
    }
    Ok(())
}

/// One replay in a fresh process: (entries, seconds, peak KiB, fits).
fn child(args: &[String]) -> anyhow::Result<(u64, f64, u64, bool)> {
    let v = measured::in_fresh_process(args)?;
    let [entries, secs, fits, peak_kib] = v.as_slice() else {
        anyhow::bail!("the replay's report is not four fields: {v:?}");
    };
    Ok((
        entries.parse()?,
        secs.parse()?,
        peak_kib.parse()?,
        fits == "true",
    ))
}

/// The child: one `memviz replay`, then its report: entries, seconds, fits (and the peak).
fn measure(args: &[String]) -> anyhow::Result<()> {
    let t = Instant::now();
    let all = ["memviz", "replay"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned())
        .chain(["--json".to_string()]);
    let out = memviz::run(all)?;
    let secs = t.elapsed().as_secs_f64();
    let json: serde_json::Value = serde_json::from_str(&out)?;
    measured::report(&[
        json["trace_entries"].to_string(),
        format!("{secs:.3}"),
        json["fits"].to_string(),
    ])
}
