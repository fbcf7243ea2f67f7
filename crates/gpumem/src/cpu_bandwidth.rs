//! How close the cpu backing's elementwise kernels come to the memory's limit: each kernel's
//! bytes moved per second on tensors far larger than the caches, beside a plain copy of the
//! same bytes (`copy_from_slice`, on one core and on every core) — what the throughput bench
//! prints.

use crate::device::Device;
use crate::error::Error;
use crate::exec::par;
use crate::ops;
use crate::ops::AdamStep;
use crate::tensor::{DType, Tensor};
use std::time::Instant;

/// One kernel's measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The kernel, with PyTorch's name where it has one.
    pub name: &'static str,
    /// Tensors it reads and writes, each counted once (the least traffic it can make).
    pub tensors: u32,
    /// Bytes read plus bytes written per call.
    pub bytes: u64,
    /// Median seconds per call.
    pub seconds: f64,
}

impl Kernel {
    pub fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e9
    }
}

/// Median seconds of `runs` calls of `f`, after one warm-up call.
fn median(runs: usize, mut f: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    f()?;
    let mut t: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            f().map(|()| start.elapsed().as_secs_f64())
        })
        .collect::<Result<_, _>>()?;
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Every elementwise kernel of the step on float32 tensors of `values` values, and the copies
/// that bound them, `runs` timed calls each.
pub fn measure(values: u64, runs: usize) -> Result<Vec<Kernel>, Error> {
    let bytes = values * 4;
    let device = Device::cpu(bytes * 8 + (64 << 20));
    let tensor = |label: &str, fill: f32| -> Result<Tensor, Error> {
        let t = Tensor::new(
            &device,
            1,
            values,
            DType::F32,
            crate::Role::Temporary,
            label,
        )?;
        ops::fill(&t, fill)?;
        Ok(t)
    };
    let (a, b, c) = (tensor("a", 0.5)?, tensor("b", -0.25)?, tensor("c", 0.0)?);
    let (m, v) = (tensor("exp_avg", 0.0)?, tensor("exp_avg_sq", 0.0)?);
    let hp = AdamStep {
        lr: 1e-3,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        step: 1,
    };
    let row = |name, tensors: u32, seconds| Kernel {
        name,
        tensors,
        bytes: bytes * u64::from(tensors),
        seconds,
    };
    let src = vec![1f32; values as usize];
    let mut dst = vec![0f32; values as usize];
    let one_core = median(runs, || {
        dst.copy_from_slice(&src);
        Ok(())
    })?;
    let all_cores = median(runs, || {
        par::elementwise(&mut dst, |at, d| d.copy_from_slice(&src[at..at + d.len()]));
        Ok(())
    })?;
    Ok(vec![
        row("copy_from_slice (1 core)", 2, one_core),
        row("copy_from_slice (all cores)", 2, all_cores),
        row(
            "copy (_to_copy, clone)",
            2,
            median(runs, || ops::copy(&a, &c))?,
        ),
        row("fill", 1, median(runs, || ops::fill(&c, 1.0))?),
        row("relu", 2, median(runs, || ops::relu(&a, &c))?),
        row(
            "threshold_backward",
            3,
            median(runs, || ops::threshold_backward(&a, &b, &c))?,
        ),
        row("add_", 3, median(runs, || ops::add(&c, &a))?),
        row(
            "sgd (param -= lr·grad)",
            3,
            median(runs, || ops::sgd(&c, &a, 1e-3))?,
        ),
        row(
            "adam (fused)",
            7,
            median(runs, || ops::adam(&c, &a, &m, &v, hp))?,
        ),
        row("colsum (2000 columns)", 1, {
            let t = Tensor::new(
                &device,
                values / 2000,
                2000,
                DType::F32,
                crate::Role::Temporary,
                "dz",
            )?;
            ops::fill(&t, 0.5)?;
            let sums = Tensor::new(&device, 1, 2000, DType::F32, crate::Role::Temporary, "db")?;
            median(runs, || ops::colsum(&t, &sums))?
        }),
    ])
}
