//! Measuring Challenge 4's times: the demo run on each setup and backing, and the machine
//! and date the record names.

use super::{
    BackendTimes, DEMO_COMMANDS, DemoTime, MEASURE_COMMAND, Record, RowTimes, SETUPS, SetupTimes,
};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

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
            let (result, text) = cli::capture(|| demos::challenge4::run(argv));
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

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_779), "2026-11-22");
    }
}
