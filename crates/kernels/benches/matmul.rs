//! `cargo bench -p gpumem-kernels --bench matmul`: GFLOP/s of the wgpu matmul kernels
//! against `matrixmultiply::sgemm` on the CPU (square n = 256, 512, 1024, median of 5),
//! then the lesson network's skinny products at batch 4096. The tables and how they are
//! measured live in `gpumem_kernels::bench`, which the engine's throughput bench prints too.

use gpumem_kernels::{Gpu, GpuOptions, bench};

fn main() {
    let gpu = match Gpu::new(&GpuOptions::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("no adapter, nothing to bench: {e}");
            return;
        }
    };
    let mut out = std::io::stdout().lock();
    bench::matmul_table(&gpu, &mut out).expect("stdout");
    bench::skinny_table(&gpu, 4096, &mut out).expect("stdout");
    println!(
        "load average after: {}",
        bench::loadavg().unwrap_or_else(|| "?".into())
    );
    let errors = gpu.take_errors();
    if !errors.is_empty() {
        eprintln!("wgpu errors: {errors:#?}");
        std::process::exit(1);
    }
}
