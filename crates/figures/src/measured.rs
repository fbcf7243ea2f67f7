//! Challenge 4's times: the one kind of number in the book that is measured, not planned.
//!
//! A time changes from machine to machine and from run to run, so it cannot be regenerated
//! byte for byte like everything else here. Instead `cargo run --release -p figures --
//! --measure` runs Challenge 4's demo (`demos::challenge4::run … --json`, the instructor's command)
//! on each setup and backing, and records what it printed in [`RECORD_PATH`], with the
//! machine, the date and the command. The chart and the table are rendered from that record
//! (deterministically), and [`load`] checks the record against a fresh plan of the same
//! setups: when the engine's memory or the demo's strategies change, the record is stale and
//! the staleness test fails until it is measured again.

use crate::data::LESSON_WIDTH;
use anyhow::{Context, Result, anyhow};
use demos::challenge4::strategies::{self, Accumulation, Cheapest, Planner, Row};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::fit::checkpointing_has_effect;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::{Checkpointing, MlpConfig, Precision};
use serde::{Deserialize, Serialize};

mod run;
pub use run::measure;

/// Challenge 4's deeper setup: Challenge 1's full batch with this many hidden layers, where
/// checkpointing has layers to drop (`cargo run -p challenge4 -- --layers 9`).
pub const CHALLENGE4_DEEP_LAYERS: u64 = 9;

/// Where the record lives: beside the crate that renders it (not under the book's
/// `src/generated/`, which holds only what `cargo run -p figures` writes).
pub const RECORD_PATH: &str = "crates/figures/measured/challenge4_times.json";

/// The record's file (read when rendering, so a fresh measurement is used at once).
fn record_file() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("measured/challenge4_times.json")
}

fn read() -> Result<Record> {
    let path = record_file();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {RECORD_PATH}: measure it with `{MEASURE_COMMAND}`"))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {RECORD_PATH}"))
}

/// The command that measures the record again.
pub const MEASURE_COMMAND: &str = "cargo run --release -p figures -- --measure";

/// A setup the demo is timed on: its hidden layers, the demo's extra arguments, and the
/// backings it is timed on.
#[derive(Debug)]
pub struct TimedSetup {
    pub layers: u64,
    pub args: &'static [&'static str],
    pub backends: &'static [&'static str],
}

/// The default demo (Challenge 1's full batch), on cpu and wgpu; the deeper setup, where
/// checkpointing has layers to drop, on cpu only (nine layers of 2000 take minutes a row on
/// a software wgpu adapter), on a smaller sample.
pub const SETUPS: [TimedSetup; 2] = [
    TimedSetup {
        layers: 1,
        args: &["--time-samples", "20000", "--time-epochs", "3"],
        backends: &["cpu", "wgpu"],
    },
    TimedSetup {
        layers: CHALLENGE4_DEEP_LAYERS,
        args: &["--time-samples", "1024", "--time-epochs", "3"],
        backends: &["cpu"],
    },
];

/// The epochs each row was timed over (`--time-epochs`, the demo's default 1 when not given):
/// each time is their mean, which evens out a busy machine's bursts.
pub fn time_epochs(args: &[String]) -> u64 {
    args.iter()
        .position(|a| a == "--time-epochs")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(1)
}

/// Everything one measurement recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// How to measure it again.
    pub command: String,
    /// UTC date of the measurement, `YYYY-MM-DD`.
    pub date: String,
    /// The processor and its cores.
    pub machine: String,
    pub setups: Vec<SetupTimes>,
    /// The instructor's commands, timed (the instructors' page).
    pub demos: Vec<DemoTime>,
}

/// One instructor's command, timed as a workshop runs it: the debug build, already built.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DemoTime {
    /// Where it runs, relative to the repository root (`.` for the root).
    pub dir: String,
    pub command: String,
    /// Median wall time over `runs` runs.
    pub seconds: f64,
    pub runs: usize,
    /// Its exit status (the grader of an unsolved exercise fails, on purpose).
    pub success: bool,
    /// `/proc/loadavg`'s first three fields before it ran.
    pub load_average: String,
}

/// The instructors' page's commands: (folder, command line).
pub const DEMO_COMMANDS: &[(&str, &str)] = &[
    (".", "cargo run -p challenge1"),
    (".", "cargo run -p challenge1 -- --backend plan"),
    (".", "cargo run -p challenge1 -- --backend wgpu"),
    (".", "cargo run -p challenge2"),
    (".", "cargo run -p challenge2 -- --optimizer adam"),
    (
        ".",
        "cargo run -p challenge2 -- --backend cpu --device-memory 64MiB --hidden 512",
    ),
    (".", "cargo run -p challenge3"),
    (".", "cargo run -p challenge3 -- --scenario leak"),
    (".", "cargo run -p challenge3 -- --scenario fragmentation"),
    (".", "cargo run -p challenge4"),
    (".", "cargo run -p challenge5"),
    ("exercises/challenge1", "cargo test --test grade"),
];

/// The default demos, which the issue and the pages promise finish in under 5 seconds on a
/// machine without a GPU (after the build).
pub const DEFAULT_DEMOS: [&str; 5] = [
    "cargo run -p challenge1",
    "cargo run -p challenge2",
    "cargo run -p challenge3",
    "cargo run -p challenge4",
    "cargo run -p challenge5",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetupTimes {
    pub layers: u64,
    pub runs: Vec<BackendTimes>,
}

/// One run of the demo: `cargo run --release -p challenge4 -- {args}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackendTimes {
    pub args: Vec<String>,
    pub backend: String,
    /// The device as the demo named it (the wgpu adapter, or the host).
    pub device: String,
    /// Rows of the sample the steps were timed on.
    pub sample_rows: u64,
    pub rows: Vec<RowTimes>,
}

/// One strategy: its planned peak (for the staleness check) and its measured time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowTimes {
    pub name: String,
    pub peak_allocated: u64,
    pub seconds_per_epoch: Option<f64>,
    pub relative_to_none: Option<f64>,
    pub not_measured: Option<String>,
}

/// The lesson's network with `layers` hidden layers, as the demo builds it by default.
pub fn base(layers: u64) -> MlpConfig {
    MlpConfig::lesson(LESSON_WIDTH).with_layers(layers)
}

/// The demo's rows for `layers`, planned at full size, as `cargo run -p challenge4` plans them.
pub fn planned_rows(layers: u64) -> Result<Vec<Row>> {
    Ok(planned(layers)?.0)
}

/// [`planned_rows`] and the combinations the demo recommends (rows of the table too).
pub fn planned(layers: u64) -> Result<(Vec<Row>, Cheapest)> {
    let (f32, sqrt) = (Precision::Float32, Checkpointing::Sqrt);
    let base = base(layers);
    let plan = Planner::new(CARD_BYTES);
    let k = strategies::micro_batches(&plan, &base, FULL, f32, Accumulation::Auto, sqrt)?;
    let (mut rows, cheapest) = strategies::table(&plan, &base, FULL, f32, k, sqrt)?;
    for row in &mut rows {
        row.plan(&plan, &base, FULL)?;
    }
    Ok((rows, cheapest))
}

/// Whether a row is a step of its own (checkpointing with nothing to drop is the plain step).
pub fn distinct(row: &Row, layers: u64) -> bool {
    row.strategy.checkpointing == Checkpointing::Off
        || checkpointing_has_effect(row.strategy.checkpointing, layers)
}

/// The committed record, checked against a fresh plan of every setup.
pub fn load() -> Result<Record> {
    let record = read()?;
    check(&record)?;
    Ok(record)
}

fn check(record: &Record) -> Result<()> {
    let stale = |why: String| {
        anyhow!("{RECORD_PATH} is stale: {why}; measure again with `{MEASURE_COMMAND}`")
    };
    if record.setups.len() != SETUPS.len() {
        return Err(stale(format!(
            "{} setups recorded, {} timed",
            record.setups.len(),
            SETUPS.len()
        )));
    }
    let timed: Vec<(&str, &str)> = record
        .demos
        .iter()
        .map(|d| (d.dir.as_str(), d.command.as_str()))
        .collect();
    if timed != DEMO_COMMANDS {
        return Err(stale(format!(
            "the instructors' commands are now {DEMO_COMMANDS:?}, the record timed {timed:?}"
        )));
    }
    for (setup, timed) in record.setups.iter().zip(&SETUPS) {
        if setup.layers != timed.layers {
            return Err(stale(format!(
                "{} layers recorded, {} timed",
                setup.layers, timed.layers
            )));
        }
        let planned = planned_rows(setup.layers)?;
        for run in &setup.runs {
            let recorded: Vec<(&str, u64)> = run
                .rows
                .iter()
                .map(|r| (r.name.as_str(), r.peak_allocated))
                .collect();
            let now: Vec<(&str, u64)> = planned
                .iter()
                .map(|r| (r.name.as_str(), r.peak_allocated))
                .collect();
            if recorded != now {
                return Err(stale(format!(
                    "{} layer(s) on {}: the demo now plans {now:?}, the record has {recorded:?}",
                    setup.layers, run.backend
                )));
            }
        }
    }
    Ok(())
}

/// Writes `record` to [`RECORD_PATH`].
pub fn save(record: &Record) -> Result<std::path::PathBuf> {
    let path = record_file();
    let mut text = serde_json::to_string_pretty(record)?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_whose_peaks_moved_is_stale() {
        let mut record = read().unwrap();
        check(&record).expect("the committed record is current");
        record.setups[0].runs[0].rows[0].peak_allocated += 512;
        let e = check(&record).unwrap_err().to_string();
        assert!(e.contains("is stale") && e.contains(MEASURE_COMMAND), "{e}");
    }
}
