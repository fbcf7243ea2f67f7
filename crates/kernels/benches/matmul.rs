//! `cargo bench -p gpumem-kernels --bench matmul`: GFLOP/s of the wgpu matmul kernels
//! against `matrixmultiply::sgemm` on the CPU, square n = 256, 512, 1024, median of 5.
//!
//! A sample is one submission of `reps` matmuls (so small sizes run ≥ ~0.1 s) and a wait
//! for the queue; the first submission (shader compilation) is excluded. Each wgpu sample is
//! followed by a CPU sample at the same size, so both see the same machine load: the CPU
//! figure is the better median of `matrixmultiply::sgemm` on one thread and on every core
//! (rows split between threads; a busy neighbour makes two threads wait for the slower).
//! Timings swing with load, so every row shows how many cores other processes kept busy.

use std::time::Instant;

use gpumem_kernels::testing::{self, Rng};
use gpumem_kernels::{Gemm, Gpu, GpuOptions, Kernels, MatmulKernel, Matrix, Part};

const SIZES: [usize; 3] = [256, 512, 1024];
const SAMPLES: usize = 5;

struct Variant {
    name: &'static str,
    kernel: MatmulKernel,
    plain: bool,
    ta: bool,
    tb: bool,
}

fn main() {
    let gpu = match Gpu::new(&GpuOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("no adapter, nothing to bench: {e}");
            return;
        }
    };
    let best = Kernels::new(&gpu.device).expect("kernels");
    let plain = Kernels::with_limits(
        &gpu.device,
        gpumem_kernels::KernelLimits {
            subgroups: false,
            ..*best.limits()
        },
    )
    .expect("kernels");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let info = gpu.info();
    println!(
        "adapter: {} ({:?}, {}), subgroups in matmul: {}",
        info.name,
        info.device_type,
        info.driver_info,
        best.uses_subgroups()
    );
    println!(
        "machine: {cores} cores, load average before: {}",
        loadavg().unwrap_or_else(|| "?".into())
    );
    let variants = [
        Variant {
            name: "naive",
            kernel: MatmulKernel::Naive,
            plain: false,
            ta: false,
            tb: false,
        },
        Variant {
            name: "tiled (no subgroups)",
            kernel: MatmulKernel::Auto,
            plain: true,
            ta: false,
            tb: false,
        },
        Variant {
            name: "tiled+subgroup",
            kernel: MatmulKernel::Auto,
            plain: false,
            ta: false,
            tb: false,
        },
        Variant {
            name: "tiled+subgroup",
            kernel: MatmulKernel::Auto,
            plain: false,
            ta: true,
            tb: false,
        },
        Variant {
            name: "tiled+subgroup",
            kernel: MatmulKernel::Auto,
            plain: false,
            ta: false,
            tb: true,
        },
    ];
    println!();
    println!(
        "| kernel               | form |    n | wgpu GFLOP/s | sgemm GFLOP/s (threads) | wgpu/cpu | other load (cores) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in SIZES {
        let mut cpu = Cpu::new(n, cores);
        for v in &variants {
            let k = if v.plain { &plain } else { &best };
            let (gf, cpu_gf, threads, other) = measure(&gpu, k, v, n, &mut cpu);
            let form = match (v.ta, v.tb) {
                (false, false) => "NN",
                (true, false) => "TN",
                (false, true) => "NT",
                (true, true) => "TT",
            };
            println!(
                "| {:<20} | {form}   | {n:>4} | {gf:>12.2} | {cpu_gf:>15.1} ({threads}) | {:>7.1}% | {other:>18.2} |",
                v.name,
                100.0 * gf / cpu_gf,
            );
        }
    }
    println!();
    println!(
        "load average after: {}",
        loadavg().unwrap_or_else(|| "?".into())
    );
    let errors = gpu.take_errors();
    if !errors.is_empty() {
        eprintln!("wgpu errors: {errors:#?}");
        std::process::exit(1);
    }
}

/// Median GFLOP/s of the wgpu variant and of the CPU (interleaved), the CPU's thread
/// count, and the other processes' load meanwhile.
fn measure(gpu: &Gpu, k: &Kernels, v: &Variant, n: usize, cpu: &mut Cpu) -> (f64, f64, usize, f64) {
    let mut rng = Rng::new(n as u64);
    let bytes = (n * n * 4) as u64;
    let buffers: Vec<wgpu::Buffer> = (0..3)
        .map(|_| {
            let b = testing::storage_buffer(gpu, bytes);
            testing::write(gpu, &b, 0, &rng.vec(n * n));
            b
        })
        .collect();
    let parts: Vec<[Part<'_>; 1]> = buffers
        .iter()
        .map(|buffer| {
            [Part {
                buffer,
                offset: 0,
                len: bytes,
            }]
        })
        .collect();
    let nn = n as u64;
    let g = Gemm {
        a: Matrix::new(&parts[0], nn, nn),
        trans_a: v.ta,
        b: Matrix::new(&parts[1], nn, nn),
        trans_b: v.tb,
        c: Matrix::new(&parts[2], nn, nn),
        accumulate: false,
        bias: None,
    };
    let run = |reps: usize| {
        let t = Instant::now();
        let mut e = gpu.device.create_command_encoder(&Default::default());
        for _ in 0..reps {
            k.matmul_with(&mut e, &g, v.kernel).expect("matmul");
        }
        gpu.queue.submit([e.finish()]);
        gpu.wait().expect("wait");
        t.elapsed().as_secs_f64()
    };
    run(1); // compile + warm-up
    let reps = (0.1 / run(1)).ceil().clamp(1.0, 64.0) as usize;
    let load = Load::start();
    let mut times = Vec::new();
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        times.push(run(reps) / reps as f64);
        one.push(cpu.sample(1));
        all.push(cpu.sample(cpu.cores));
    }
    let other = load.other_cores();
    let flop = 2.0 * (n * n * n) as f64;
    let (one, all) = (flop / median(&mut one) / 1e9, flop / median(&mut all) / 1e9);
    let (cpu_gf, threads) = if one >= all {
        (one, 1)
    } else {
        (all, cpu.cores)
    };
    (flop / median(&mut times) / 1e9, cpu_gf, threads, other)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `matrixmultiply::sgemm` on n×n matrices, rows split between threads.
struct Cpu {
    n: usize,
    cores: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    /// Calls per sample, so a sample takes ≥ ~0.05 s.
    reps: usize,
}

impl Cpu {
    fn new(n: usize, cores: usize) -> Cpu {
        let mut rng = Rng::new(7);
        let mut cpu = Cpu {
            n,
            cores,
            a: rng.vec(n * n),
            b: rng.vec(n * n),
            c: vec![0.0; n * n],
            reps: 1,
        };
        let t = cpu.sample(1);
        cpu.reps = (0.05 / t).ceil().clamp(1.0, 1000.0) as usize;
        cpu
    }

    /// Seconds per sgemm.
    fn sample(&mut self, threads: usize) -> f64 {
        let n = self.n;
        let rows = n.div_ceil(threads);
        let t = Instant::now();
        for _ in 0..self.reps {
            std::thread::scope(|s| {
                for (i, chunk) in self.c.chunks_mut(rows * n).enumerate() {
                    let (a, b) = (&self.a[i * rows * n..], &self.b);
                    let m = chunk.len() / n;
                    s.spawn(move || {
                        // SAFETY: a holds ≥ m rows of n, b n×n, chunk m×n, with these
                        // strides, and the slices outlive the call.
                        unsafe {
                            matrixmultiply::sgemm(
                                m,
                                n,
                                n,
                                1.0,
                                a.as_ptr(),
                                n as isize,
                                1,
                                b.as_ptr(),
                                n as isize,
                                1,
                                0.0,
                                chunk.as_mut_ptr(),
                                n as isize,
                                1,
                            )
                        }
                    });
                }
            });
        }
        t.elapsed().as_secs_f64() / self.reps as f64
    }
}

fn loadavg() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// Busy time of the whole machine minus this process's, over an interval (Linux only).
struct Load {
    t: Instant,
    busy: Option<f64>,
    own: Option<f64>,
}

impl Load {
    fn start() -> Load {
        Load {
            t: Instant::now(),
            busy: machine_busy_s(),
            own: own_cpu_s(),
        }
    }

    /// Average number of cores other processes kept busy.
    fn other_cores(&self) -> f64 {
        let dt = self.t.elapsed().as_secs_f64();
        match (self.busy, machine_busy_s(), self.own, own_cpu_s()) {
            (Some(b0), Some(b1), Some(o0), Some(o1)) if dt > 0.0 => {
                ((b1 - b0) - (o1 - o0)).max(0.0) / dt
            }
            _ => f64::NAN,
        }
    }
}

const TICKS: f64 = 100.0;

fn machine_busy_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<f64> = s
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: f64 = f.iter().take(8).sum();
    let idle = f.get(3)? + f.get(4)?;
    Some((total - idle) / TICKS)
}

fn own_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / TICKS)
}
