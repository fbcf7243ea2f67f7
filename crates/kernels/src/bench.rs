//! Benchmarks shared by `cargo bench -p gpumem-kernels --bench matmul` and the engine's
//! `cargo bench -p gpumem --bench throughput`, so one run prints the matmul tables and the
//! training throughput side by side, measured under the same load.
//!
//! * [`matmul_table`]: GFLOP/s of each wgpu matmul kernel (naive, tiled without and with
//!   subgroups; NN, TN, NT) on square n = 256, 512, 1024 against `matrixmultiply::sgemm`.
//! * [`skinny_table`]: the lesson network's matmuls at batch 4096 (one dimension of 2),
//!   the skinny kernels against the naive kernel and sgemm with the same strides.
//!
//! A wgpu sample is one submission of `reps` matmuls (so small sizes run ≥ ~0.1 s) and a
//! wait for the queue; the first submission (shader compilation) is excluded. Each wgpu
//! sample is followed by a CPU sample of the same shape, so both see the same machine load:
//! the CPU figure is the better median of `matrixmultiply::sgemm` on one thread and on every
//! core (rows split between threads; a busy neighbour makes two threads wait for the
//! slower). Timings swing with load, so every row shows how many cores other processes
//! kept busy meanwhile ([`Load`]).

use std::io::{self, Write};
use std::time::Instant;

use crate::gpu::Gpu;
use crate::kernels::Kernels;
use crate::limits::KernelLimits;
use crate::matmul::{Gemm, MatmulKernel};
use crate::testing::{self, Rng};
use crate::view::{Matrix, Part};

mod cpu;
mod load;

use self::cpu::Cpu;
pub use self::load::{Load, loadavg};

/// Square sizes of [`matmul_table`].
pub const SIZES: [usize; 3] = [256, 512, 1024];
/// Samples per figure (the median is reported).
pub const SAMPLES: usize = 5;

/// One row of a matmul table.
#[derive(Clone, Debug)]
pub struct MatmulRow {
    pub kernel: String,
    /// `NN`, `TN` or `NT`.
    pub form: &'static str,
    /// m × k × n.
    pub shape: (usize, usize, usize),
    pub wgpu_gflops: f64,
    pub cpu_gflops: f64,
    /// Threads of the better CPU figure.
    pub cpu_threads: usize,
    /// Cores other processes kept busy during the measurement.
    pub other_load: f64,
}

struct Variant {
    name: &'static str,
    kernel: MatmulKernel,
    plain: bool,
    ta: bool,
    tb: bool,
}

fn form(ta: bool, tb: bool) -> &'static str {
    match (ta, tb) {
        (false, false) => "NN",
        (true, false) => "TN",
        (false, true) => "NT",
        (true, true) => "TT",
    }
}

/// The adapter and machine, as the tables' header.
pub fn header(gpu: &Gpu, kernels: &Kernels, out: &mut impl Write) -> io::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let info = gpu.info();
    writeln!(
        out,
        "adapter: {} ({:?}, {}), subgroups in matmul: {}, float16: {}, float64: {}",
        info.name,
        info.device_type,
        info.driver_info,
        kernels.uses_subgroups(),
        if kernels.uses_native_f16() {
            "native"
        } else {
            "packed"
        },
        if kernels.supports_f64() { "yes" } else { "no" },
    )?;
    writeln!(
        out,
        "machine: {cores} cores, load average: {}",
        loadavg().unwrap_or_else(|| "?".into())
    )
}

/// GFLOP/s of every wgpu matmul kernel at [`SIZES`] against the CPU sgemm, printed to
/// `out` row by row as measured (a Markdown table) and returned.
pub fn matmul_table(gpu: &Gpu, out: &mut impl Write) -> io::Result<Vec<MatmulRow>> {
    let best = Kernels::new(&gpu.device).map_err(io::Error::other)?;
    let plain = best
        .reuse_with_limits(KernelLimits {
            subgroups: false,
            ..*best.limits()
        })
        .map_err(io::Error::other)?;
    header(gpu, &best, out)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let v = |name, kernel, plain, ta, tb| Variant {
        name,
        kernel,
        plain,
        ta,
        tb,
    };
    let sub = if best.uses_subgroups() {
        "tiled+subgroup"
    } else {
        "tiled (no subgroups)"
    };
    let variants = [
        v("naive", MatmulKernel::Naive, false, false, false),
        v(
            "tiled (no subgroups)",
            MatmulKernel::Auto,
            true,
            false,
            false,
        ),
        v(sub, MatmulKernel::Auto, false, false, false),
        v(sub, MatmulKernel::Auto, false, true, false),
        v(sub, MatmulKernel::Auto, false, false, true),
    ];
    writeln!(out)?;
    writeln!(
        out,
        "| kernel               | form |    n | wgpu GFLOP/s | sgemm GFLOP/s (threads) | wgpu/cpu | other load (cores) |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    let mut rows = Vec::new();
    for n in SIZES {
        let mut cpu = Cpu::new((n, n, n), (false, false), cores);
        for v in &variants {
            let k = if v.plain { &plain } else { &best };
            let row = measure(gpu, k, v.name, v.kernel, (n, n, n), (v.ta, v.tb), &mut cpu);
            print_row(out, &row, &format!("{n:>4}"))?;
            rows.push(row);
        }
    }
    writeln!(out)?;
    Ok(rows)
}

/// The lesson network's matmuls (2 → 2000 → 2) at a batch of `batch` rows: the skinny
/// kernels (`auto`) against the naive kernel and the CPU sgemm with the same strides.
pub fn skinny_table(gpu: &Gpu, batch: usize, out: &mut impl Write) -> io::Result<Vec<MatmulRow>> {
    let k = Kernels::new(&gpu.device).map_err(io::Error::other)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let h = 2000;
    // (what, m, k, n, ta, tb)
    let shapes = [
        ("z = x·W0 (k = 2)", batch, 2, h, false, false),
        ("logits = a·W1 (n = 2)", batch, h, 2, false, false),
        ("dW1 = aᵀ·dlogits (n = 2)", h, batch, 2, true, false),
        ("da = dlogits·W1ᵀ (k = 2)", batch, 2, h, false, true),
        ("dW0 = xᵀ·dz (m = 2)", 2, batch, h, true, false),
    ];
    writeln!(out)?;
    writeln!(
        out,
        "| product (batch {batch})        | kernel | form | wgpu GFLOP/s | sgemm GFLOP/s (threads) | wgpu/cpu | other load (cores) |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|")?;
    let mut rows = Vec::new();
    for (what, m, kk, n, ta, tb) in shapes {
        let mut cpu = Cpu::new((m, kk, n), (ta, tb), cores);
        for (name, kernel) in [("auto", MatmulKernel::Auto), ("naive", MatmulKernel::Naive)] {
            let row = measure(gpu, &k, name, kernel, (m, kk, n), (ta, tb), &mut cpu);
            print_row(out, &row, &format!("{what:<26}"))?;
            rows.push(row);
        }
    }
    writeln!(out)?;
    Ok(rows)
}

fn print_row(out: &mut impl Write, r: &MatmulRow, first: &str) -> io::Result<()> {
    if r.shape.0 == r.shape.1 && r.shape.1 == r.shape.2 {
        writeln!(
            out,
            "| {:<20} | {}   | {first} | {:>12.2} | {:>15.1} ({}) | {:>7.1}% | {:>18.2} |",
            r.kernel,
            r.form,
            r.wgpu_gflops,
            r.cpu_gflops,
            r.cpu_threads,
            100.0 * r.wgpu_gflops / r.cpu_gflops,
            r.other_load
        )
    } else {
        writeln!(
            out,
            "| {first} | {:<6} | {}   | {:>12.3} | {:>15.2} ({}) | {:>7.1}% | {:>18.2} |",
            r.kernel,
            r.form,
            r.wgpu_gflops,
            r.cpu_gflops,
            r.cpu_threads,
            100.0 * r.wgpu_gflops / r.cpu_gflops,
            r.other_load
        )
    }
}

/// Median GFLOP/s of one wgpu kernel and of the CPU (interleaved), the CPU's thread
/// count, and the other processes' load meanwhile.
fn measure(
    gpu: &Gpu,
    k: &Kernels,
    name: &str,
    kernel: MatmulKernel,
    (m, kk, n): (usize, usize, usize),
    (ta, tb): (bool, bool),
    cpu: &mut Cpu,
) -> MatmulRow {
    let mut rng = Rng::new((m * n + kk) as u64);
    let sizes = [m * kk, kk * n, m * n];
    let buffers: Vec<wgpu::Buffer> = sizes
        .iter()
        .map(|&len| {
            let b = testing::storage_buffer(gpu, (len * 4) as u64);
            testing::write(gpu, &b, 0, &rng.vec(len));
            b
        })
        .collect();
    let parts: Vec<[Part<'_>; 1]> = buffers
        .iter()
        .zip(sizes)
        .map(|(buffer, len)| {
            [Part {
                buffer,
                offset: 0,
                len: (len * 4) as u64,
            }]
        })
        .collect();
    let (m64, k64, n64) = (m as u64, kk as u64, n as u64);
    let (a_rows, a_cols) = if ta { (k64, m64) } else { (m64, k64) };
    let (b_rows, b_cols) = if tb { (n64, k64) } else { (k64, n64) };
    let g = Gemm {
        a: Matrix::new(&parts[0], a_rows, a_cols),
        trans_a: ta,
        b: Matrix::new(&parts[1], b_rows, b_cols),
        trans_b: tb,
        c: Matrix::new(&parts[2], m64, n64),
        accumulate: false,
        bias: None,
    };
    let run = |reps: usize| {
        let t = Instant::now();
        let mut e = gpu.device.create_command_encoder(&Default::default());
        for _ in 0..reps {
            k.matmul_with(&mut e, &g, kernel).expect("matmul");
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
    let flop = 2.0 * (m * kk * n) as f64;
    let (one, all) = (flop / median(&mut one) / 1e9, flop / median(&mut all) / 1e9);
    let (cpu_gflops, cpu_threads) = if one >= all {
        (one, 1)
    } else {
        (all, cpu.cores)
    };
    MatmulRow {
        kernel: name.to_string(),
        form: form(ta, tb),
        shape: (m, kk, n),
        wgpu_gflops: flop / median(&mut times) / 1e9,
        cpu_gflops,
        cpu_threads,
        other_load: other,
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
