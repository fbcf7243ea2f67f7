//! How far the engine's training step is from PyTorch's: every setup of the committed
//! PyTorch fixture (`tests/fixtures/pytorch_step_peaks.json`, made by
//! `reference/pytorch/step_peaks.py`) planned on the engine, its peak of requested bytes
//! beside PyTorch's peak of raw tensor bytes.
//!
//! `cargo run -p gpumem --example pytorch_gap [-- --json]`. A report to read; the test that
//! holds the engine to it is `tests/pytorch_fixture.rs`. Setups the engine does not express
//! (CPU autocast's loss policy: the engine follows CUDA's) are listed as such. `--fixture`
//! takes a CUDA run's file too (`step_peaks.py --backend cuda`); its JSON rows also hold the
//! engine's peak allocated (`engine_allocated`), which is what that file's peaks measure, and
//! the same with the cuBLAS workspaces of each reading of PyTorch's rules
//! (`engine_allocated_with`: 2.15's default, cuBLASLt's 1 MiB only; 2.15 with
//! `TORCH_CUBLAS_WORKSPACE_CACHE=1`; 2.10), sized for the card the file names
//! (`environment.gpu_capability`, pre-Hopper when absent).

use clap::Parser;
use gpumem::cublas::{DEFAULT_LT_WORKSPACE, TorchRules, WorkspaceRules, default_cublas_workspace};
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

/// The readings of PyTorch's workspace rules a CUDA run can settle, for a card of compute
/// capability `(major, minor)`.
fn readings(major: u32, minor: u32) -> Vec<(&'static str, WorkspaceRules)> {
    let rules = |torch, cached| {
        let cublas = default_cublas_workspace(torch, major, minor);
        WorkspaceRules::for_torch(torch, cached, cublas, DEFAULT_LT_WORKSPACE)
    };
    vec![
        ("torch 2.15", rules(TorchRules::V2_15, false)),
        ("torch 2.15 cached", rules(TorchRules::V2_15, true)),
        ("torch 2.10", rules(TorchRules::V2_10, false)),
    ]
}

fn compare(setup: &Setup, readings: &[(&str, WorkspaceRules)]) -> Value {
    let (name, pytorch) = (&setup.name, setup.peak_bytes);
    let plan = |c: &gpumem::mlp::MlpConfig, cublas: WorkspaceRules| {
        let options = gpumem::DeviceOptions {
            cublas,
            ..planning_unlimited()
        };
        measure_step(&options, c, setup.batch, 0).map_err(|e| e.to_string())
    };
    let engine = setup.config().and_then(|c| {
        let m = plan(&c, WorkspaceRules::NONE)?;
        let with = readings
            .iter()
            .map(|&(label, rules)| Ok((label.to_string(), json!(plan(&c, rules)?.peak_allocated))))
            .collect::<Result<serde_json::Map<String, Value>, String>>()?;
        Ok((m.peak_requested, m.peak_allocated, with))
    });
    match engine {
        // `engine_allocated` (whole 512 B blocks) is the figure to hold against a CUDA run's
        // peak (step_peaks.py --backend cuda: max_memory_allocated, workspaces included).
        Ok((e, allocated, with)) => json!({
            "name": name, "pytorch": pytorch, "engine": e, "engine_allocated": allocated,
            "engine_allocated_with": with,
            "difference": (e as f64 - pytorch as f64) / pytorch as f64,
        }),
        Err(why) => json!({"name": name, "pytorch": pytorch, "not_modelled": why}),
    }
}

/// The compute capability a CUDA run's file names, if any.
fn capability(path: &std::path::Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: Value = serde_json::from_str(&text).ok()?;
    let c = doc.get("environment")?.get("gpu_capability")?.as_array()?;
    Some((c.first()?.as_u64()? as u32, c.get(1)?.as_u64()? as u32))
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
    // Pre-Hopper (the lesson's card's generation) unless the file names its card.
    let (major, minor) = capability(&args.fixture).unwrap_or({
        let c = gpumem::lesson::LESSON_COMPUTE_CAPABILITY;
        (c.major, c.minor)
    });
    let readings = readings(major, minor);
    let rows: Vec<Value> = fixture
        .setups
        .iter()
        .map(|s| compare(s, &readings))
        .collect();
    if args.json {
        println!(
            "{}",
            json!({"torch_version": fixture.torch_version, "compute_capability": [major, minor], "rows": rows})
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
