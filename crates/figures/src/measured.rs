//! Challenge 4's times: the one kind of number in the book that is measured, not planned.
//!
//! A time changes from machine to machine and from run to run, so it cannot be regenerated
//! byte for byte like everything else here. Instead `cargo run --release -p figures --
//! --measure` runs Challenge 4's demo (`challenge4::run … --json`, the instructor's command)
//! on each setup and backing, and records what it printed in [`RECORD_PATH`], with the
//! machine, the date and the command. The chart and the table are rendered from that record
//! (deterministically), and [`load`] checks the record against a fresh plan of the same
//! setups: when the engine's memory or the demo's strategies change, the record is stale and
//! the staleness test fails until it is measured again.

use crate::data::LESSON_WIDTH;
use anyhow::{Context, Result, anyhow, bail};
use challenge4::strategies::{self, Accumulation, Cheapest, Planner, Row};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::fit::checkpointing_has_effect;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::{Checkpointing, MlpConfig, Precision};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    ("exercises/challenge1", "cargo test --test grade"),
];

/// The default demos, which the issue and the pages promise finish in under 5 seconds on a
/// machine without a GPU (after the build).
pub const DEFAULT_DEMOS: [&str; 4] = [
    "cargo run -p challenge1",
    "cargo run -p challenge2",
    "cargo run -p challenge3",
    "cargo run -p challenge4",
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

/// Runs the demo on every setup and backing and returns what it measured. A backing that
/// cannot run (no wgpu adapter) is left out, with a line on stderr.
pub fn measure() -> Result<Record> {
    let mut setups = Vec::new();
    for timed in &SETUPS {
        let mut runs = Vec::new();
        for backend in timed.backends {
            let layers = timed.layers.to_string();
            let mut args: Vec<String> = vec!["--backend".into(), backend.to_string()];
            if timed.layers != 1 {
                args.extend(["--layers".into(), layers]);
            }
            args.extend(timed.args.iter().map(|a| a.to_string()));
            eprintln!(
                "measuring: cargo run --release -p challenge4 -- {}",
                args.join(" ")
            );
            let argv = std::iter::once("challenge4".to_string())
                .chain(args.iter().cloned())
                .chain(std::iter::once("--json".to_string()));
            let (result, text) = demo::capture(|| challenge4::run(argv));
            if let Err(e) = result {
                eprintln!("  skipped: {e:#}");
                continue;
            }
            let json: Value = serde_json::from_str(&text).context("the demo's --json output")?;
            runs.push(backend_times(args, &json)?);
        }
        setups.push(SetupTimes {
            layers: timed.layers,
            runs,
        });
    }
    Ok(Record {
        command: MEASURE_COMMAND.to_string(),
        date: today(),
        machine: machine(),
        setups,
        demos: time_demos()?,
    })
}

/// The repository's root (this crate is `crates/figures`).
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cargo(dir: &str, command: &str) -> std::process::Command {
    let mut words = command.split_whitespace().skip(1);
    let mut cmd = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()));
    cmd.current_dir(root().join(dir))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // `-q` after the subcommand: cargo's own lines are not the demo's time.
    if let Some(sub) = words.next() {
        cmd.arg(sub).arg("-q");
    }
    cmd.args(words);
    cmd
}

/// Times [`DEMO_COMMANDS`] after building them: the median of 3 runs, or 1 for a run over
/// 5 seconds.
fn time_demos() -> Result<Vec<DemoTime>> {
    eprintln!("building the demos (debug, as a workshop runs them)");
    for (dir, command) in [
        (
            ".",
            "cargo build -p challenge1 -p challenge2 -p challenge3 -p challenge4",
        ),
        ("exercises/challenge1", "cargo test --test grade --no-run"),
    ] {
        let status = cargo(dir, command).status()?;
        if !status.success() {
            bail!("`{command}` failed in {dir}");
        }
    }
    let mut times = Vec::new();
    for (dir, command) in DEMO_COMMANDS {
        eprintln!("timing: {command} (in {dir})");
        let load_average = std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        let mut seconds = Vec::new();
        let mut success = true;
        while seconds.len() < 3 {
            let start = std::time::Instant::now();
            let status = cargo(dir, command).status()?;
            seconds.push(start.elapsed().as_secs_f64());
            success &= status.success();
            if seconds[0] > 5.0 {
                break;
            }
        }
        seconds.sort_by(f64::total_cmp);
        times.push(DemoTime {
            dir: dir.to_string(),
            command: command.to_string(),
            seconds: seconds[seconds.len() / 2],
            runs: seconds.len(),
            success,
            load_average,
        });
    }
    Ok(times)
}

fn backend_times(args: Vec<String>, json: &Value) -> Result<BackendTimes> {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let timing = &json["timing"];
    let executed = timing["executed"].as_bool() == Some(true);
    if !executed {
        bail!("the demo did not execute its timing runs: {timing}");
    }
    let rows = json["rows"]
        .as_array()
        .ok_or_else(|| anyhow!("no rows in the demo's JSON"))?
        .iter()
        .map(|r| {
            let t = &r["timing"];
            Ok(RowTimes {
                name: text(&r["name"]).ok_or_else(|| anyhow!("a row without a name"))?,
                peak_allocated: r["peak_allocated"]
                    .as_u64()
                    .ok_or_else(|| anyhow!("a row without peak_allocated"))?,
                seconds_per_epoch: t["seconds_per_epoch"].as_f64(),
                relative_to_none: t["relative_to_none"].as_f64(),
                not_measured: text(&t["not_measured"]),
            })
        })
        .collect::<Result<_>>()?;
    Ok(BackendTimes {
        args,
        backend: text(&timing["backend"]).unwrap_or_default(),
        device: text(&json["device"]["name"]).unwrap_or_default(),
        sample_rows: timing["samples"].as_u64().unwrap_or(0),
        rows,
    })
}

/// `model name` of /proc/cpuinfo (where there is one) and the cores this process may use.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{model}, {cores} cores")
}

/// Today's UTC date as `YYYY-MM-DD` (days since 1970 to a civil date, Hinnant's algorithm).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date((secs / 86_400) as i64)
}

fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
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
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_779), "2026-11-22");
    }

    #[test]
    fn a_record_whose_peaks_moved_is_stale() {
        let mut record = read().unwrap();
        check(&record).expect("the committed record is current");
        record.setups[0].runs[0].rows[0].peak_allocated += 512;
        let e = check(&record).unwrap_err().to_string();
        assert!(e.contains("is stale") && e.contains(MEASURE_COMMAND), "{e}");
    }
}
