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

/// CPU seconds of this process's finished children (`/proc/self/stat`'s cutime + cstime).
fn children_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    let ticks = |i: usize| f.get(i)?.parse::<f64>().ok();
    Some((ticks(13)? + ticks(14)?) / 100.0)
}

/// PyTorch's median samples/s at one optimizer and batch, from
/// `reference/pytorch/throughput.py` run by the interpreter `python`, with its version and the
/// cores other processes kept busy meanwhile; the error says what went wrong.
fn torch_rate(python: &str, optimizer: &str, batch: u64, steps: usize) -> Result<Torch, String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../reference/pytorch/throughput.py"
    );
    let (load, children) = (Load::start(), children_cpu_s());
    let start = Instant::now();
    let out = std::process::Command::new(python)
        .arg(script)
        .args(["--width", &WIDTH.to_string()])
        .args(["--optimizers", optimizer])
        .args(["--batches", &format!("{batch}:{steps}")])
        .args(["--runs", &RUNS.to_string()])
        .args(["--threads", &TORCH_THREADS.to_string()])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    let (wall, other) = (start.elapsed().as_secs_f64(), load.other_cores());
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{python} {script} failed: {}", err.trim()));
    }
    // `Load` counts our child as another process: take its CPU time back out.
    let child = match (children, children_cpu_s()) {
        (Some(a), Some(b)) if wall > 0.0 => (b - a) / wall,
        _ => f64::NAN,
    };
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the script's output is not JSON: {e}"))?;
    let rate = json["rows"][0]["samples_per_s"]
        .as_f64()
        .ok_or("the script's JSON has no samples_per_s")?;
    Ok(Torch {
        version: json["torch"].as_str().unwrap_or("?").to_string(),
        rate,
        other: (other - child).max(0.0),
    })
}

/// PyTorch's figures for one row.
struct Torch {
    version: String,
    rate: f64,
    /// Cores other processes kept busy while it ran (its interpreter's start included).
    other: f64,
}

/// One row of the training table per backing, optimizer and batch. PyTorch runs right after
/// our rows of the same optimizer and batch, so that both meet about the same load.
fn training_table(gpu: Option<&testing::TestGpu>, cores: usize) {
    let card = MemorySpec::Bytes(8 << 30);
    let python = std::env::var(TORCH_ENV).ok();
    let mut version = None;
    let mut lines = Vec::new();
    for (opt, optimizer) in optimizers() {
        for (batch, steps) in BATCHES {
            let mut devices = vec![("cpu", Device::cpu(8 << 30))];
            if let Some(g) = gpu {
                devices.push(("wgpu", g.device(card)));
            }
            let ours: Vec<_> = devices
                .into_iter()
                .map(|(name, device)| {
                    let avg = bench::loadavg().unwrap_or_else(|| "?".into());
                    (name, throughput(&device, optimizer, batch, steps), avg)
                })
                .collect();
            let torch = python.as_deref().map(|p| torch_rate(p, opt, batch, steps));
            let theirs = match &torch {
                Some(Ok(t)) => {
                    version = Some(t.version.clone());
                    format!("{:.0} | {:.2}", t.rate, t.other)
                }
                Some(Err(e)) => format!("error: {e} |"),
                None => "– | –".into(),
            };
            for (name, result, avg) in ours {
                let line = match (result, &torch) {
                    (Ok((rate, other)), Some(Ok(t))) => format!(
                        "| {name} | {opt} | {batch} | {rate:.0} | {theirs} | {:.2}× | {other:.2} | {avg} |",
                        rate / t.rate
                    ),
                    (Ok((rate, other)), _) => format!(
                        "| {name} | {opt} | {batch} | {rate:.0} | {theirs} | – | {other:.2} | {avg} |"
                    ),
                    (Err(e), _) => {
                        format!("| {name} | {opt} | {batch} | error: {e} | {theirs} | | | {avg} |")
                    }
                };
                lines.push(line);
            }
        }
    }
    println!("training throughput, lesson network 2 → {WIDTH} → 2; {cores} cores");
    match (&python, version) {
        (Some(_), Some(v)) => println!(
            "PyTorch {v} on the CPU with {TORCH_THREADS} threads: the same network, batches and \
             steps, run right after our rows of each optimizer and batch"
        ),
        (Some(_), None) => println!("PyTorch's rows failed: see the error in the table"),
        (None, _) => println!(
            "(PyTorch's figures: set {TORCH_ENV} to a Python with torch, e.g. \
             {TORCH_ENV}=/work/venv-torch/bin/python)"
        ),
    }
    println!();
    println!(
        "| backing | optimizer | batch | samples/s | PyTorch CPU samples/s | PyTorch's other \
         load (cores) | ours/PyTorch | other load (cores) | load average |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for line in lines {
        println!("{line}");
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
