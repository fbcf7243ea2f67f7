//! How far the engine's training step is from PyTorch's: every setup of the committed
//! PyTorch fixture (`tests/fixtures/pytorch_step_peaks.json`, made by
//! `reference/pytorch/step_peaks.py`) planned on the engine, its peak of requested bytes
//! beside PyTorch's peak of raw tensor bytes.
//!
//! `cargo run -p gpumem --example pytorch_gap [-- --json]`. A report for the work of making
//! the step PyTorch's, not a test: setups the engine cannot express yet are listed as such.

use clap::Parser;
use gpumem::lesson::planning_unlimited;
use gpumem::measure::measure_step;
use gpumem::mlp::{Checkpointing, MlpConfig, Optimizer, Precision, Strategy};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

/// Compare the engine's planned step with PyTorch's measured one, setup by setup.
#[derive(Debug, Parser)]
struct Args {
    /// The fixture written by reference/pytorch/step_peaks.py.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pytorch_step_peaks.json"))]
    fixture: PathBuf,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
}

/// The engine's configuration for a fixture setup, or why it has none yet.
fn config(setup: &Value) -> Result<MlpConfig, String> {
    let num = |v: &Value, k: &str| v[k].as_u64().ok_or(format!("`{k}` is not a whole number"));
    let opt = &setup["optimizer"];
    let lr = opt["lr"].as_f64().unwrap_or(0.001) as f32;
    let optimizer = match opt["name"].as_str() {
        Some("sgd") if opt["momentum"].as_f64() == Some(0.0) => Optimizer::Sgd { lr },
        Some("sgd") => return Err("SGD with momentum".into()),
        Some("adam") if opt["fused"].as_bool() == Some(true) => return Err("fused Adam".into()),
        Some("adam") if opt["foreach"].as_bool() == Some(false) => {
            return Err("Adam without foreach".into());
        }
        Some("adam") => Optimizer::adam(lr),
        other => return Err(format!("optimizer {other:?}")),
    };
    let s = &setup["strategy"];
    if s["relu_inplace"].as_bool() == Some(true) {
        return Err("in-place ReLU".into());
    }
    if s["zero_grad_set_to_none"].as_bool() == Some(false) {
        return Err("zero_grad(set_to_none=False)".into());
    }
    let precision = if s["autocast"].is_null() {
        Precision::Float32
    } else {
        Precision::Mixed
    };
    let checkpointing = match num(s, "checkpoint_segment")? {
        0 => Checkpointing::Off,
        k => Checkpointing::Every(k),
    };
    Ok(MlpConfig {
        inputs: num(setup, "inputs")?,
        hidden: num(setup, "width")?,
        layers: num(setup, "layers")?,
        classes: num(setup, "classes")?,
        optimizer,
        strategy: Strategy {
            precision,
            accumulation: num(s, "accumulation")?,
            checkpointing,
        },
    })
}

fn compare(setup: &Value) -> Value {
    let name = setup["name"].as_str().unwrap_or("?");
    let pytorch = setup["peak_bytes"].as_u64().unwrap_or(0);
    let engine = config(setup).and_then(|c| {
        let batch = setup["batch"].as_u64().ok_or("no batch")?;
        measure_step(&planning_unlimited(), &c, batch, 0)
            .map(|m| m.peak_requested)
            .map_err(|e| e.to_string())
    });
    match engine {
        Ok(e) => json!({
            "name": name, "pytorch": pytorch, "engine": e,
            "difference": (e as f64 - pytorch as f64) / pytorch as f64,
        }),
        Err(why) => json!({"name": name, "pytorch": pytorch, "not_modelled": why}),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let fixture: Value = match std::fs::read_to_string(&args.fixture)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            eprintln!("pytorch_gap: {}: {e}", args.fixture.display());
            return ExitCode::from(2);
        }
    };
    let rows: Vec<Value> = fixture["setups"]
        .as_array()
        .map(|s| s.iter().map(compare).collect())
        .unwrap_or_default();
    if args.json {
        println!(
            "{}",
            json!({"torch_version": fixture["torch_version"], "rows": rows})
        );
        return ExitCode::SUCCESS;
    }
    println!(
        "PyTorch {} (MemTracker, two steps) against the engine's planned step (peak requested)",
        fixture["torch_version"].as_str().unwrap_or("?")
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
