//! `cargo bench -p gpumem --bench throughput`: one run on one machine prints
//! 1. matmul GFLOP/s of each wgpu kernel at n = 256, 512, 1024 against the CPU sgemm, with
//!    their ratio (`gpumem_kernels::bench::matmul_table`);
//! 2. the lesson network's skinny products at batch 4096, skinny kernels against the naive
//!    kernel and sgemm (`gpumem_kernels::bench::skinny_table`);
//! 3. training throughput (samples/s) of the lesson's network (2 → 2000 → 2) with SGD and
//!    Adam at batch 32 and 4096 on the cpu and wgpu backings, median of 5 timed runs after a
//!    warm-up — beside PyTorch's on the same machine when `GPUMEM_TORCH_PYTHON` names a
//!    Python with torch (it runs `reference/pytorch/throughput.py`: the same network,
//!    batches and steps, PyTorch's CPU defaults on 2 threads);
//! 4. the cpu backing's elementwise kernels in GB/s against a plain copy of the same bytes:
//!    at batch 4096 the step is bound by memory, and the copy is the limit.
//!
//! Every row carries the load: how many cores other processes kept busy while it was
//! measured (this machine is shared, and timings swing 2× with it), and the load average.
//! A timed run is a fixed number of training steps ending with the loss read back, so the
//! GPU's queue is drained inside the timing.

use gpumem::data::Dataset;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::testing;
use gpumem::{Device, MemorySpec};
use gpumem_kernels::bench::{self, Load};
use std::time::Instant;

const RUNS: usize = 5;
const WIDTH: u64 = 2000;
const LR: f32 = 0.001;
/// The batches and the steps of one timed run at each.
const BATCHES: [(u64, usize); 2] = [(32, 200), (4096, 10)];
/// PyTorch's intra-op threads: this machine's two cores.
const TORCH_THREADS: usize = 2;
/// The interpreter that runs PyTorch's side.
const TORCH_ENV: &str = "GPUMEM_TORCH_PYTHON";
/// Values per tensor in the GB/s table: a batch of 4096 rows of 2000, as the step's largest.
const BANDWIDTH_VALUES: u64 = 4096 * WIDTH;

/// The optimizers compared, by the names the PyTorch script takes.
fn optimizers() -> [(&'static str, Optimizer); 2] {
    [("sgd", Optimizer::sgd(LR)), ("adam", Optimizer::adam(LR))]
}

/// Median samples/s of `steps` steps at `batch` rows, and the other processes' load.
fn throughput(
    device: &Device,
    optimizer: Optimizer,
    batch: u64,
    steps: usize,
) -> Result<(f64, f64), gpumem::Error> {
    let config = MlpConfig::lesson(WIDTH).with_optimizer(optimizer);
    let data = Dataset::generate(batch, 1).train;
    let mut mlp = Mlp::new(device, &config, 1)?;
    mlp.train_step(Batch::Data(&data))?; // warm-up: pipelines, first segments, Adam's state
    let load = Load::start();
    let mut rates = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        for _ in 0..steps {
            mlp.train_step(Batch::Data(&data))?;
        }
        rates.push((steps as u64 * batch) as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    Ok((rates[RUNS / 2], load.other_cores()))
}

/// PyTorch's medians by (optimizer, batch), from `reference/pytorch/throughput.py` run by
/// the interpreter `python`; the error says what went wrong.
fn torch_rates(python: &str) -> Result<(String, Vec<(String, u64, f64)>), String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../reference/pytorch/throughput.py"
    );
    let batches: Vec<String> = BATCHES.iter().map(|(b, s)| format!("{b}:{s}")).collect();
    let out = std::process::Command::new(python)
        .arg(script)
        .args(["--width", &WIDTH.to_string()])
        .args(["--optimizers", "sgd,adam"])
        .args(["--batches", &batches.join(",")])
        .args(["--runs", &RUNS.to_string()])
        .args(["--threads", &TORCH_THREADS.to_string()])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{python} {script} failed: {}", err.trim()));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the script's output is not JSON: {e}"))?;
    let version = json["torch"].as_str().unwrap_or("?").to_string();
    let rows = json["rows"]
        .as_array()
        .ok_or("the script's JSON has no rows")?
        .iter()
        .filter_map(|r| {
            Some((
                r["optimizer"].as_str()?.to_string(),
                r["batch"].as_u64()?,
                r["samples_per_s"].as_f64()?,
            ))
        })
        .collect();
    Ok((version, rows))
}

/// One row of the training table per backing, optimizer and batch: our rows first, then
/// PyTorch's run (so neither loads the machine while the other is timed), then the table.
fn training_table(gpu: Option<&testing::TestGpu>, cores: usize) {
    let card = MemorySpec::Bytes(8 << 30);
    let mut rows = Vec::new();
    for (opt_name, optimizer) in optimizers() {
        for (batch, steps) in BATCHES {
            let mut devices = vec![("cpu", Device::cpu(8 << 30))];
            if let Some(g) = gpu {
                devices.push(("wgpu", g.device(card)));
            }
            for (name, device) in devices {
                let avg = bench::loadavg().unwrap_or_else(|| "?".into());
                let result = throughput(&device, optimizer, batch, steps);
                rows.push((name, opt_name, batch, result, avg));
            }
        }
    }
    let torch = std::env::var(TORCH_ENV).ok().map(|python| {
        let avg = bench::loadavg().unwrap_or_else(|| "?".into());
        (torch_rates(&python), avg)
    });
    println!("training throughput, lesson network 2 → {WIDTH} → 2; {cores} cores");
    match &torch {
        Some((Ok((version, _)), avg)) => println!(
            "PyTorch {version} on the CPU, {TORCH_THREADS} threads, same network, batches and \
             steps (load average before it ran: {avg})"
        ),
        Some((Err(e), _)) => println!("PyTorch's rows failed: {e}"),
        None => println!(
            "(PyTorch's rows: set {TORCH_ENV} to a Python with torch, e.g. \
             {TORCH_ENV}=/work/venv-torch/bin/python)"
        ),
    }
    println!();
    println!(
        "| backing | optimizer | batch | samples/s | PyTorch CPU samples/s | ours/PyTorch | \
         other load (cores) | load average |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, opt, batch, result, avg) in rows {
        let torch_rate = match &torch {
            Some((Ok((_, t)), _)) => t
                .iter()
                .find(|(o, b, _)| o == opt && *b == batch)
                .map(|r| r.2),
            _ => None,
        };
        let (theirs, ratio) = match (torch_rate, &result) {
            (Some(t), Ok((ours, _))) => (format!("{t:.0}"), format!("{:.2}×", ours / t)),
            (Some(t), Err(_)) => (format!("{t:.0}"), String::new()),
            _ => ("–".into(), "–".into()),
        };
        match result {
            Ok((rate, other)) => println!(
                "| {name} | {opt} | {batch} | {rate:.0} | {theirs} | {ratio} | {other:.2} | {avg} |"
            ),
            Err(e) => println!("| {name} | {opt} | {batch} | error: {e} | {theirs} | | | {avg} |"),
        }
    }
    println!();
}

/// The GB/s table: each elementwise kernel against `copy_from_slice` of the same bytes.
fn bandwidth_table() {
    let load = Load::start();
    let avg = bench::loadavg().unwrap_or_else(|| "?".into());
    let kernels = match gpumem::cpu_bandwidth::measure(BANDWIDTH_VALUES, RUNS) {
        Ok(k) => k,
        Err(e) => return println!("elementwise bandwidth: error: {e}"),
    };
    let limit = kernels[0].gb_per_s();
    println!(
        "cpu backing, elementwise kernels on float32 tensors of {BANDWIDTH_VALUES} values \
         ({} MB each), median of {RUNS}; other load {:.2} cores, load average {avg}",
        BANDWIDTH_VALUES * 4 / 1_000_000,
        load.other_cores()
    );
    println!();
    println!("| kernel | tensors read + written | ms | GB/s | of a 1-core copy |");
    println!("|---|---|---|---|---|");
    for k in &kernels {
        println!(
            "| {} | {} | {:.2} | {:.1} | {:.0}% |",
            k.name,
            k.tensors,
            k.seconds * 1e3,
            k.gb_per_s(),
            100.0 * k.gb_per_s() / limit
        );
    }
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let gpu = testing::gpu();
    let mut out = std::io::stdout().lock();
    match &gpu {
        Some(g) => {
            bench::matmul_table(g.gpu(), &mut out).expect("stdout");
            bench::skinny_table(g.gpu(), 4096, &mut out).expect("stdout");
        }
        None => println!("(no wgpu adapter: the matmul tables and wgpu rows are skipped)"),
    }
    drop(out);
    training_table(gpu.as_ref(), cores);
    bandwidth_table();
}
