//! `cargo bench -p gpumem --bench throughput`: training throughput (samples/s) of the
//! lesson's network (2 → 2000 → 2, SGD) at batch 32 and 4096 on the cpu and wgpu backings,
//! median of 5 timed runs after a warm-up, with the machine's load beside each row.
//!
//! A timed run is a fixed number of training steps ending with the loss read back, so the
//! GPU's queue is drained inside the timing.

use gpumem::data::Dataset;
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::testing;
use gpumem::{Device, MemorySpec};
use std::time::Instant;

const RUNS: usize = 5;
const WIDTH: u64 = 2000;

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().next().unwrap_or("?").to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Median samples/s of `steps` steps at `batch` rows.
fn throughput(device: &Device, batch: u64, steps: usize) -> Result<f64, gpumem::Error> {
    let config = MlpConfig::lesson(WIDTH);
    let data = Dataset::generate(batch, 1).train;
    let mut mlp = Mlp::new(device, &config, 1)?;
    mlp.train_step(Batch::Data(&data))?; // warm-up: pipelines, first segments
    let mut rates = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        for _ in 0..steps {
            mlp.train_step(Batch::Data(&data))?;
        }
        rates.push((steps as u64 * batch) as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    Ok(rates[RUNS / 2])
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("training throughput, lesson network 2 → {WIDTH} → 2, SGD; {cores} cores");
    println!(
        "{:<8} {:>6} {:>14} {:>6}",
        "backing", "batch", "samples/s", "load"
    );
    let card = MemorySpec::Bytes(8 << 30);
    let gpu = testing::gpu();
    for batch in [32u64, 4096] {
        let steps = if batch == 32 { 200 } else { 10 };
        let mut devices = vec![("cpu", Device::cpu(8 << 30))];
        if let Some(g) = &gpu {
            devices.push(("wgpu", g.device(card)));
        }
        for (name, device) in devices {
            match throughput(&device, batch, steps) {
                Ok(rate) => println!("{name:<8} {batch:>6} {rate:>14.0} {:>6}", loadavg()),
                Err(e) => println!("{name:<8} {batch:>6} error: {e}"),
            }
        }
    }
    if gpu.is_none() {
        println!("(no wgpu adapter: wgpu rows skipped)");
    }
}
