//! `cargo bench -p gpumem --bench wgpu_step`: the wgpu backing's training step on the
//! lesson network (2 → 2000 → 2), SGD and Adam: median ms/step, samples/s, and what one
//! steady step submits, dispatches and creates (the backing's counters, one step after
//! warm-up). "submit share" is the time spent in `queue.submit`, "device share" the time
//! from there to the loss arriving, each over the whole step. "kernel share" is the device's
//! own clock: timestamp queries around each compute pass (where the adapter has
//! `TIMESTAMP_QUERY`), summed over a further run of the same steps and divided by that run's
//! time; that run waits for the device at each submission, so its ms/step is printed beside.
//!
//! A timed run is a fixed number of steps, each ending with the loss read back (the
//! training loop asks for it), so the queue is drained inside the timing.
//!
//! The floor: one dispatch that does nothing (a ReLU of 4 floats), recorded as the engine
//! records a step (under a step cache: the step's shared compute pass, cached bind group,
//! uniform ring), timed from submission to completion and divided by the dispatches; times
//! the step's dispatch count, it is what a step would cost if its kernels had no work.
//!
//! Then a per-kernel profile (each dispatch in a timed pass of its own), and, on lavapipe,
//! the step table of a second run with the driver's worker threads off (`LP_NUM_THREADS=0`).

use gpumem::data::Dataset;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::testing;
use gpumem::{Device, MemorySpec};
use gpumem_kernels::bench::Load;
use gpumem_kernels::{Gpu, Kernels, Matrix, Part, StepCache, WgpuCounters};
use std::time::Instant;

const RUNS: usize = 5;
const WARM_UP: usize = 8;
const WIDTH: u64 = 2000;
/// Empty dispatches per timed submission of the floor.
const FLOOR_DISPATCHES: usize = 200;
/// Steps whose kernels are profiled.
const PROFILE_STEPS: usize = 20;

/// One row: median ms/step and the counters of one steady step (with the whole steps'
/// time in those steps, for the device share).
struct Row {
    ms: f64,
    step: WgpuCounters,
    share: f64,
    submit_share: f64,
    /// Cores other processes kept busy meanwhile (this machine is shared).
    load: f64,
    /// The timed run: kernel time over its wall time, and its ms/step.
    kernels: Option<(f64, f64)>,
}

fn measure(
    device: &Device,
    config: &MlpConfig,
    batch: u64,
    steps: usize,
) -> Result<Row, gpumem::Error> {
    let data = Dataset::generate(batch, 1).train;
    let mut mlp = Mlp::new(device, config, 1)?;
    // Warm-up: pipelines, first segments, and the allocator's free lists settling (until
    // then a step's blocks move, and so do its bind groups).
    for _ in 0..WARM_UP {
        mlp.train_step(Batch::Data(&data))?;
    }
    let counters = || device.wgpu_counters().unwrap_or_default();
    let before = counters();
    mlp.train_step(Batch::Data(&data))?;
    let step = counters() - before;
    let load = Load::start();
    let mut times = Vec::with_capacity(RUNS);
    let mut shares = Vec::with_capacity(RUNS);
    let mut submit_shares = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let c0 = counters();
        let start = Instant::now();
        for _ in 0..steps {
            mlp.train_step(Batch::Data(&data))?;
        }
        let elapsed = start.elapsed();
        times.push(elapsed.as_secs_f64() * 1e3 / steps as f64);
        let c = counters() - c0;
        shares.push(c.wait_ns as f64 / elapsed.as_nanos() as f64);
        submit_shares.push(c.submit_ns as f64 / elapsed.as_nanos() as f64);
    }
    times.sort_by(f64::total_cmp);
    shares.sort_by(f64::total_cmp);
    submit_shares.sort_by(f64::total_cmp);
    let kernels = kernel_share(device, &mut mlp, &data, steps)?;
    Ok(Row {
        kernels,
        ms: times[RUNS / 2],
        step,
        share: shares[RUNS / 2],
        submit_share: submit_shares[RUNS / 2],
        load: load.other_cores(),
    })
}

/// One more run of `steps` with the kernels timed by timestamp queries: (kernel time / wall
/// time, ms/step of this run), or `None` where the adapter has no timestamp queries.
fn kernel_share(
    device: &Device,
    mlp: &mut Mlp,
    data: &gpumem::data::Split,
    steps: usize,
) -> Result<Option<(f64, f64)>, gpumem::Error> {
    if !device.time_kernels() {
        return Ok(None);
    }
    let before = device.kernel_time().unwrap_or_default();
    let start = Instant::now();
    for _ in 0..steps {
        mlp.train_step(Batch::Data(data))?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let after = device.kernel_time().unwrap_or_default();
    let kernel = (after.nanoseconds - before.nanoseconds) * 1e-9;
    Ok(Some((kernel / elapsed, elapsed * 1e3 / steps as f64)))
}

fn main() {
    let Some(gpu) = testing::gpu() else {
        println!("(no wgpu adapter: nothing to measure)");
        return;
    };
    let card = MemorySpec::Bytes(8 << 30);
    println!(
        "wgpu training step, lesson network 2 → {WIDTH} → 2, adapter {}",
        gpu.gpu().info().name
    );
    println!(
        "adapter offers TIMESTAMP_QUERY: {} (requested when offered; only this bench's timed run uses it)",
        timestamps(&gpu.gpu().info().name)
    );
    let floor = dispatch_floor(gpu.gpu());
    match &floor {
        Ok(us) => println!(
            "floor: an empty dispatch in the step's shared pass costs {us:.1} µs (median of {RUNS} submissions of {FLOOR_DISPATCHES}); floor share = that × the step's dispatches / its time"
        ),
        Err(e) => println!("floor: not measured ({e})"),
    }
    println!();
    println!(
        "| batch | optimizer | ms/step (median) | samples/s | submits | dispatches | bind groups | pipelines | buffers created | buffer writes | read-backs | submit share | device share | floor share | kernel share (timestamps; that run's ms/step) | other load (cores) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for batch in batches() {
        let steps = if batch == 32 { 100 } else { 5 };
        for (name, config) in configs() {
            match measure(&gpu.device(card), &config, batch, steps) {
                Ok(r) => {
                    let c = r.step;
                    let floor_share = floor.as_ref().map_or("?".to_string(), |us| {
                        format!("{:.0} %", us * c.dispatches as f64 / (r.ms * 1e3) * 100.0)
                    });
                    let kernel_share = r
                        .kernels
                        .map_or("no timestamp queries".to_string(), |(share, ms)| {
                            format!("{:.0} % ({ms:.3})", share * 100.0)
                        });
                    println!(
                        "| {batch} | {name} | {:.3} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {:.0} % | {:.0} % | {floor_share} | {kernel_share} | {:.2} |",
                        r.ms,
                        batch as f64 * 1e3 / r.ms,
                        c.submits,
                        c.dispatches,
                        c.bind_groups,
                        c.pipelines,
                        c.buffers_created(),
                        c.buffer_writes,
                        c.read_backs,
                        r.submit_share * 100.0,
                        r.share * 100.0,
                        r.load
                    )
                }
                Err(e) => println!("| {batch} | {name} | error: {e} | | | | | | | | | | | | | |"),
            }
        }
    }
    if std::env::var_os(INLINE_CHILD).is_some() {
        return;
    }
    print_profiles(&gpu, card);
    if gpu.gpu().info().name.contains("llvmpipe") {
        print_inline_rows();
    }
}

/// Set in the run this bench starts for [`print_inline_rows`] (which prints its table only).
const INLINE_CHILD: &str = "GPUMEM_BENCH_INLINE_CHILD";

/// The step table again from a second run of this bench with lavapipe's worker threads off
/// (`LP_NUM_THREADS=0`, read when the driver starts, hence a second process): each
/// dispatch then runs on the submitting thread, without the hand-off to a worker that the
/// floor above measures. A setting of the driver, not of the engine.
fn print_inline_rows() {
    println!();
    println!(
        "The same steps with lavapipe's worker threads off (LP_NUM_THREADS=0, a setting of the driver; a second run of this bench):"
    );
    println!();
    let run = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .env("LP_NUM_THREADS", "0")
            .env(INLINE_CHILD, "1")
            .output()
    });
    match run {
        Ok(out) if out.status.success() => {
            let table = String::from_utf8_lossy(&out.stdout);
            for line in table.lines().filter(|l| l.starts_with('|')) {
                println!("{line}");
            }
        }
        Ok(out) => println!("(that run failed: {})", out.status),
        Err(e) => println!("(that run could not start: {e})"),
    }
}

/// The step's optimizers' configurations.
fn configs() -> [(&'static str, MlpConfig); 2] {
    let config = MlpConfig::lesson(WIDTH);
    [
        ("SGD", config.clone()),
        ("Adam", config.with_optimizer(Optimizer::adam(1e-3))),
    ]
}

/// Per kernel: each dispatch timed in a pass of its own (which costs more than the step's
/// shared pass, so the sum exceeds the step's kernel time): where the step's time goes.
fn print_profiles(gpu: &testing::TestGpu, card: MemorySpec) {
    println!();
    println!(
        "Per kernel (each dispatch in a timed pass of its own, summed over {PROFILE_STEPS} steps, per step):"
    );
    println!();
    println!("| batch | optimizer | kernel | dispatches/step | µs/step | share |");
    println!("|---|---|---|---|---|---|");
    for batch in batches() {
        for (name, config) in configs() {
            match profile(&gpu.device(card), &config, batch) {
                Ok(Some(shares)) => {
                    let total: f64 = shares.iter().map(|s| s.nanoseconds).sum();
                    for s in &shares {
                        println!(
                            "| {batch} | {name} | {} | {} | {:.1} | {:.0} % |",
                            s.kernel,
                            s.dispatches / PROFILE_STEPS as u64,
                            s.nanoseconds / 1e3 / PROFILE_STEPS as f64,
                            s.nanoseconds / total * 100.0
                        );
                    }
                    println!(
                        "| {batch} | {name} | (sum) | | {:.1} | 100 % |",
                        total / 1e3 / PROFILE_STEPS as f64
                    );
                }
                Ok(None) => println!("| {batch} | {name} | no timestamp queries | | | |"),
                Err(e) => println!("| {batch} | {name} | error: {e} | | | |"),
            }
        }
    }
}

/// [`PROFILE_STEPS`] steps after warm-up with the kernels profiled.
fn profile(
    device: &Device,
    config: &MlpConfig,
    batch: u64,
) -> Result<Option<Vec<gpumem_kernels::KernelShare>>, gpumem::Error> {
    let data = Dataset::generate(batch, 1).train;
    let mut mlp = Mlp::new(device, config, 1)?;
    for _ in 0..WARM_UP {
        mlp.train_step(Batch::Data(&data))?;
    }
    if !device.profile_kernels() {
        return Ok(None);
    }
    for _ in 0..PROFILE_STEPS {
        mlp.train_step(Batch::Data(&data))?;
    }
    Ok(Some(device.kernel_profile()))
}

/// Microseconds per empty dispatch (a ReLU of 4 floats), recorded under a step cache as the
/// engine records a step, timed from submission to completion.
fn dispatch_floor(gpu: &Gpu) -> Result<f64, String> {
    let kernels = Kernels::new(&gpu.device).map_err(|e| e.to_string())?;
    let cache = std::sync::Arc::new(StepCache::new(gpu.info().backend));
    let buffer = gpumem_kernels::testing::storage_buffer(gpu, 16);
    let part = [Part {
        buffer: &buffer,
        offset: 0,
        len: 16,
    }];
    let x = Matrix::new(&part, 1, 4);
    let mut times = Vec::with_capacity(RUNS);
    for run in 0..=RUNS {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        kernels
            .recording(&cache, |k| {
                (0..FLOOR_DISPATCHES).try_for_each(|_| k.relu(&mut encoder, &x, &x))
            })
            .map_err(|e| e.to_string())?;
        cache.before_submit(&gpu.queue);
        let start = Instant::now();
        gpu.queue.submit([encoder.finish()]);
        gpu.wait()
            .map_err(|e| format!("waiting for the device: {e}"))?;
        // The first run builds the pipeline and bind group.
        if run > 0 {
            times.push(start.elapsed().as_secs_f64() * 1e6 / FLOOR_DISPATCHES as f64);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[RUNS / 2])
}

/// Whether the adapter named `name` offers timestamp queries.
fn timestamps(name: &str) -> bool {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
        .iter()
        .filter(|a| a.get_info().name == name)
        .any(|a| a.features().contains(wgpu::Features::TIMESTAMP_QUERY))
}

/// The batches to run: `GPUMEM_BENCH_BATCHES` (comma-separated, e.g. `32` to profile one),
/// else 32 and 4096.
fn batches() -> Vec<u64> {
    std::env::var("GPUMEM_BENCH_BATCHES")
        .ok()
        .and_then(|v| v.split(',').map(|b| b.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![32, 4096])
}
