//! `cargo bench -p gpumem --bench throughput`: one run on one machine prints
//! 1. matmul GFLOP/s of each wgpu kernel at n = 256, 512, 1024 against the CPU sgemm, with
//!    their ratio (`gpumem_kernels::bench::matmul_table`);
//! 2. the lesson network's skinny products at batch 4096, skinny kernels against the naive
//!    kernel and sgemm (`gpumem_kernels::bench::skinny_table`);
//! 3. training throughput (samples/s) of the lesson's network (2 → 2000 → 2, SGD) at batch
//!    32 and 4096 on the cpu and wgpu backings, median of 5 timed runs after a warm-up.
//!
//! Every row carries the load: how many cores other processes kept busy while it was
//! measured (this machine is shared, and timings swing 2× with it), and the load average.
//! A timed run is a fixed number of training steps ending with the loss read back, so the
//! GPU's queue is drained inside the timing.

use gpumem::data::Dataset;
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::testing;
use gpumem::{Device, MemorySpec};
use gpumem_kernels::bench::{self, Load};
use std::time::Instant;

const RUNS: usize = 5;
const WIDTH: u64 = 2000;

/// Median samples/s of `steps` steps at `batch` rows, and the other processes' load.
fn throughput(device: &Device, batch: u64, steps: usize) -> Result<(f64, f64), gpumem::Error> {
    let config = MlpConfig::lesson(WIDTH);
    let data = Dataset::generate(batch, 1).train;
    let mut mlp = Mlp::new(device, &config, 1)?;
    mlp.train_step(Batch::Data(&data))?; // warm-up: pipelines, first segments
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
    println!("training throughput, lesson network 2 → {WIDTH} → 2, SGD; {cores} cores");
    println!();
    println!("| backing | batch | samples/s | other load (cores) | load average |");
    println!("|---|---|---|---|---|");
    let card = MemorySpec::Bytes(8 << 30);
    for batch in [32u64, 4096] {
        let steps = if batch == 32 { 200 } else { 10 };
        let mut devices = vec![("cpu", Device::cpu(8 << 30))];
        if let Some(g) = &gpu {
            devices.push(("wgpu", g.device(card)));
        }
        for (name, device) in devices {
            let avg = bench::loadavg().unwrap_or_else(|| "?".into());
            match throughput(&device, batch, steps) {
                Ok((rate, other)) => {
                    println!("| {name} | {batch} | {rate:.0} | {other:.2} | {avg} |")
                }
                Err(e) => println!("| {name} | {batch} | error: {e} | | {avg} |"),
            }
        }
    }
}
