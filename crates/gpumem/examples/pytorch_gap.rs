//! How far the engine's training step is from PyTorch's: every setup of the committed
//! PyTorch fixture (`tests/fixtures/pytorch_step_peaks.json`, made by
//! `reference/pytorch/step_peaks.py`) planned on the engine, its peak of requested bytes
//! beside PyTorch's peak of raw tensor bytes.
//!
//! `cargo run -p gpumem --example pytorch_gap [-- --json]`. A report to read; the test that
//! holds the engine to it is `tests/pytorch_fixture.rs`. Setups the engine does not express
//! (CPU autocast's loss policy: the engine follows CUDA's) are listed as such. `--fixture`
//! takes a CUDA run's file too (`step_peaks.py --backend cuda`); its JSON rows also hold the
//! engine's peak allocated (`engine_allocated`), which is what that file's peaks measure.

use clap::Parser;
use gpumem::lesson::planning_unlimited;
use gpumem::measure::measure_step;
use gpumem::pytorch::{Fixture, Setup};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

/// Compare the engine's planned step with PyTorch's measured one, setup by setup.
#[derive(Debug, Parser)]
struct Args {
    /// The fixture written by reference/pytorch/step_peaks.py.
    #[arg(long, default_value = gpumem::pytorch::FIXTURE)]
    fixture: PathBuf,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
}

fn compare(setup: &Setup) -> Value {
    let (name, pytorch) = (&setup.name, setup.peak_bytes);
    let engine = setup.config().and_then(|c| {
        measure_step(&planning_unlimited(), &c, setup.batch, 0)
            .map(|m| (m.peak_requested, m.peak_allocated))
            .map_err(|e| e.to_string())
    });
    match engine {
        // `engine_allocated` (whole 512 B blocks) is the figure to hold against a CUDA run's
        // peak (step_peaks.py --backend cuda: max_memory_allocated, workspaces included).
        Ok((e, allocated)) => json!({
            "name": name, "pytorch": pytorch, "engine": e, "engine_allocated": allocated,
            "difference": (e as f64 - pytorch as f64) / pytorch as f64,
        }),
        Err(why) => json!({"name": name, "pytorch": pytorch, "not_modelled": why}),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let fixture = match Fixture::load(&args.fixture) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pytorch_gap: {e}");
            return ExitCode::from(2);
        }
    };
    let rows: Vec<Value> = fixture.setups.iter().map(compare).collect();
    if args.json {
        println!(
            "{}",
            json!({"torch_version": fixture.torch_version, "rows": rows})
        );
        return ExitCode::SUCCESS;
    }
    println!(
        "PyTorch {} (MemTracker, two steps) against the engine's planned step (peak requested)",
        fixture.torch_version
    );
    println!(
        "{:<44} {:>16} {:>16} {:>8}",
        "setup", "PyTorch", "engine", "diff"
    );
    for r in &rows {
        let name = r["name"].as_str().unwrap_or("?");
        let pytorch = r["pytorch"].as_u64().unwrap_or(0);
        match r["engine"].as_u64() {
            Some(e) => println!(
                "{name:<44} {pytorch:>16} {e:>16} {:>+7.1}%",
                100.0 * r["difference"].as_f64().unwrap_or(0.0)
            ),
            None => println!(
                "{name:<44} {pytorch:>16} {:>16}",
                format!("({})", r["not_modelled"].as_str().unwrap_or("?"))
            ),
        }
    }
    let worst = rows
        .iter()
        .filter_map(|r| Some((r["difference"].as_f64()?.abs(), r["name"].as_str()?)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((d, name)) = worst {
        println!("worst: {name}, {:.1} %", 100.0 * d);
    }
    ExitCode::SUCCESS
}
