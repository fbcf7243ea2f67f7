//! Shared device, tensors placed in buffers in awkward ways, and the tolerance check.

use std::sync::OnceLock;

use gpumem_kernels::testing::{self, Rng};
use gpumem_kernels::{DType, Gpu, GpuOptions, KernelLimits, Kernels, Matrix, Part};

pub struct Ctx {
    pub gpu: Gpu,
    /// Planned with the device's own limits.
    pub full: Kernels,
    /// Planned with tiny limits: pieces and grid-stride loops on small data.
    pub tiny: Kernels,
    /// Tiny limits and no subgroups: the plain tiled kernel.
    pub plain: Kernels,
    /// Tiny limits and float16 packed in u32 words, as on devices without SHADER_F16.
    pub packed: Kernels,
    /// The device's limits, float16 packed.
    pub full_packed: Kernels,
    /// The device's limits planned as for a GPU (`cpu_plans` off): on lavapipe, the plans
    /// a real GPU runs (more workgroups, split-k, no fused backward products).
    pub gpu_plans: Kernels,
}

/// The shared context, or None (test skipped) without an adapter.
pub fn ctx() -> Option<&'static Ctx> {
    static CTX: OnceLock<Option<Ctx>> = OnceLock::new();
    CTX.get_or_init(|| testing::gpu().map(Ctx::new)).as_ref()
}

/// A context on a device opened with `wgpu::Limits::downlevel_defaults()` (what every
/// adapter offers) instead of the adapter's own limits, or None without an adapter.
pub fn downlevel_ctx() -> Option<&'static Ctx> {
    static CTX: OnceLock<Option<Ctx>> = OnceLock::new();
    CTX.get_or_init(|| {
        testing::gpu()?;
        let options = GpuOptions {
            downlevel_limits: true,
            ..Default::default()
        };
        let gpu = Gpu::new(&options).expect("the adapter, with the downlevel limits");
        Some(Ctx::new(gpu))
    })
    .as_ref()
}

/// A context on a device opened without the adapter's optional features (no `SHADER_F16`,
/// `SHADER_F64` or subgroups), as on GL or a bare adapter, or None without an adapter.
pub fn bare_ctx() -> Option<&'static Ctx> {
    static CTX: OnceLock<Option<Ctx>> = OnceLock::new();
    CTX.get_or_init(|| {
        testing::gpu()?;
        let options = GpuOptions {
            skip_optional_features: true,
            ..Default::default()
        };
        let gpu = Gpu::new(&options).expect("the adapter, without optional features");
        Some(Ctx::new(gpu))
    })
    .as_ref()
}

impl Ctx {
    fn new(gpu: Gpu) -> Ctx {
        let full = Kernels::new(&gpu.device).expect("kernels");
        let tiny_limits = KernelLimits {
            max_binding: 4096,
            offset_align: 256,
            max_workgroups: 3,
            subgroups: true,
            shader_f16: true,
            cpu_plans: full.limits().cpu_plans,
        };
        // Sharing the pipelines: each one is compiled once (seconds on lavapipe).
        let tiny = full.reuse_with_limits(tiny_limits).expect("tiny kernels");
        let plain = tiny
            .reuse_with_limits(KernelLimits {
                subgroups: false,
                ..tiny_limits
            })
            .expect("plain kernels");
        assert!(!plain.uses_subgroups());
        let packed = tiny
            .reuse_with_limits(KernelLimits {
                shader_f16: false,
                ..tiny_limits
            })
            .expect("packed kernels");
        let full_packed = full
            .reuse_with_limits(KernelLimits {
                shader_f16: false,
                ..*full.limits()
            })
            .expect("packed kernels");
        assert!(!packed.uses_native_f16() && !full_packed.uses_native_f16());
        let gpu_plans = full
            .reuse_with_limits(KernelLimits {
                cpu_plans: false,
                ..*full.limits()
            })
            .expect("kernels with a GPU's plans");
        Ctx {
            gpu,
            full,
            tiny,
            plain,
            packed,
            full_packed,
            gpu_plans,
        }
    }
}

/// Whether `k` plans with the device's own bindings (not the tiny limits' 4 KiB ones).
pub fn device_limits(k: &Kernels) -> bool {
    k.limits().max_binding > 4096
}

impl Ctx {
    /// Every configuration a kernel should be checked under.
    pub fn all(&self) -> [(&'static str, &Kernels); 4] {
        [
            ("full", &self.full),
            ("tiny", &self.tiny),
            ("plain", &self.plain),
            ("gpu_plans", &self.gpu_plans),
        ]
    }

    /// The configurations of the float16 and float64 checks: float16 native (where the
    /// device has it) and packed, each under the device's and tiny limits.
    pub fn dtype_configs(&self) -> [(&'static str, &Kernels); 4] {
        [
            ("full", &self.full),
            ("full_packed", &self.full_packed),
            ("tiny", &self.tiny),
            ("packed", &self.packed),
        ]
    }

    pub fn run(&self, f: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
        f(&mut encoder);
        self.gpu.queue.submit([encoder.finish()]);
        self.gpu.wait().expect("wait");
        let errors = self.gpu.take_errors();
        assert!(errors.is_empty(), "wgpu errors: {errors:#?}");
    }
}

/// Sentinel written around every part: a kernel writing out of range changes it.
const SENTINEL: f32 = 12345.0;
const GUARD: u64 = 64;

/// A tensor's bytes spread over one buffer per part, each part `GUARD` bytes in (plus 0–16
/// more, so parts start at different alignments) and followed by `GUARD` bytes of
/// sentinels. A float16 tensor's last part may end on a half word: the sentinel half after
/// it must survive the kernels' whole-word writes.
pub struct Stored {
    buffers: Vec<wgpu::Buffer>,
    lens: Vec<u64>,
    /// Where each part starts in its buffer.
    starts: Vec<u64>,
}

fn sentinel_byte(i: u64) -> u8 {
    SENTINEL.to_le_bytes()[(i % 4) as usize]
}

impl Stored {
    /// `cuts`: byte positions (multiples of 4) where a new part begins.
    pub fn new<T: bytemuck::Pod>(ctx: &Ctx, data: &[T], cuts: &[u64]) -> Stored {
        Self::from_bytes(ctx, bytemuck::cast_slice(data), cuts)
    }

    pub fn from_bytes(ctx: &Ctx, bytes: &[u8], cuts: &[u64]) -> Stored {
        let total = bytes.len() as u64;
        let mut bounds = vec![0];
        bounds.extend(cuts.iter().copied().filter(|&c| c > 0 && c < total));
        bounds.push(total);
        bounds.sort_unstable();
        bounds.dedup();
        let mut s = Stored {
            buffers: Vec::new(),
            lens: Vec::new(),
            starts: Vec::new(),
        };
        for (i, w) in bounds.windows(2).enumerate() {
            let len = w[1] - w[0];
            // Parts start at varying offsets, not all aligned to anything but 4.
            let start = GUARD + 4 * (i as u64 % 5);
            let size = (start + len + GUARD).next_multiple_of(4);
            let buffer = testing::storage_buffer(&ctx.gpu, size);
            let mut fill: Vec<u8> = (0..size).map(sentinel_byte).collect();
            fill[start as usize..(start + len) as usize]
                .copy_from_slice(&bytes[w[0] as usize..w[1] as usize]);
            testing::write(&ctx.gpu, &buffer, 0, &fill);
            s.buffers.push(buffer);
            s.lens.push(len);
            s.starts.push(start);
        }
        s
    }

    /// A tensor of `values` stored as `dtype`.
    pub fn of(ctx: &Ctx, values: &Host, cuts: &[u64]) -> Stored {
        Self::from_bytes(ctx, &values.bytes(), cuts)
    }

    pub fn parts(&self) -> Vec<Part<'_>> {
        self.buffers
            .iter()
            .zip(&self.lens)
            .zip(&self.starts)
            .map(|((buffer, &len), &offset)| Part {
                buffer,
                offset,
                len,
            })
            .collect()
    }

    /// Reads the tensor's bytes back and checks the sentinels around every part.
    pub fn read_bytes(&self, ctx: &Ctx) -> Vec<u8> {
        let mut bytes: Vec<u8> = Vec::new();
        for ((b, &len), &start) in self.buffers.iter().zip(&self.lens).zip(&self.starts) {
            let all: Vec<u8> = testing::read(&ctx.gpu, b, 0, b.size()).expect("read");
            let (s, e) = (start as usize, (start + len) as usize);
            for (i, &x) in all.iter().enumerate() {
                if i < s || i >= e {
                    assert_eq!(
                        x,
                        sentinel_byte(i as u64),
                        "a kernel wrote outside its tensor (byte {i} of a buffer, tensor at {s}..{e})"
                    );
                }
            }
            bytes.extend_from_slice(&all[s..e]);
        }
        bytes
    }

    /// Reads the tensor back and checks the sentinels around every part.
    pub fn read<T: bytemuck::Pod>(&self, ctx: &Ctx) -> Vec<T> {
        bytemuck::pod_collect_to_vec(&self.read_bytes(ctx))
    }

    /// Reads `dtype` values back as f64.
    pub fn values(&self, ctx: &Ctx, dtype: DType) -> Vec<f64> {
        decode(dtype, &self.read_bytes(ctx))
    }
}

/// Host values of a tensor, exactly representable in its dtype.
#[derive(Clone, Debug)]
pub struct Host {
    pub dtype: DType,
    pub values: Vec<f64>,
}

impl Host {
    /// `n` values in [-1, 1) rounded to `dtype`.
    pub fn random(rng: &mut Rng, n: usize, dtype: DType) -> Host {
        Self::from_f64(dtype, rng.vec(n).into_iter().map(f64::from).collect())
    }

    /// `values` rounded to `dtype`.
    pub fn from_f64(dtype: DType, values: Vec<f64>) -> Host {
        let h = Host { dtype, values };
        Host {
            dtype,
            values: decode(dtype, &h.bytes()),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        match self.dtype {
            DType::F16 => self
                .values
                .iter()
                .flat_map(|&v| half::f16::from_f64(v).to_le_bytes())
                .collect(),
            DType::F64 => self.values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            _ => self
                .values
                .iter()
                .flat_map(|&v| (v as f32).to_le_bytes())
                .collect(),
        }
    }
}

pub fn decode(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
            .collect(),
        DType::F64 => bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))))
            .collect(),
    }
}

/// The tolerance rule per dtype of a result: |got − ref| ≤ tol · max(1, |ref|) with tol
/// 1e-4 for float32 results, 2e-3 for float16 results (one rounding to 11 significant
/// bits is up to 4.9e-4 relative, and the device may round toward zero: twice that, plus
/// the f32 arithmetic before it) and 1e-10 for float64 (f32 arithmetic anywhere would
/// miss it by 1e-7).
pub fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2e-3,
        DType::F64 => 1e-10,
        _ => 1e-4,
    }
}

/// Asserts the tolerance rule of `dtype` element by element.
#[track_caller]
pub fn assert_close_as(what: &str, dtype: DType, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let t = tolerance(dtype);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = t * w.abs().max(1.0);
        assert!(
            (g - w).abs() <= tol,
            "{what}: element {i}: gpu {g} vs reference {w} (tolerance {tol:e})"
        );
    }
}

pub fn matrix<'a>(parts: &'a [Part<'a>], rows: u64, cols: u64) -> Matrix<'a> {
    Matrix::new(parts, rows, cols)
}

pub fn labels<'a>(parts: &'a [Part<'a>], n: u64) -> Matrix<'a> {
    Matrix {
        dtype: DType::U32,
        ..Matrix::new(parts, n, 1)
    }
}

/// Whether `k` can hold every one of `dtypes` (float64 needs `SHADER_F64`).
pub fn has_dtypes(k: &Kernels, dtypes: &[DType]) -> bool {
    !dtypes.contains(&DType::F64) || k.supports_f64()
}

/// Whether `k` stores float16 packed, where a float16 operand written by rows is refused.
pub fn packed_f16(k: &Kernels, dtype: DType) -> bool {
    dtype == DType::F16 && !k.uses_native_f16()
}

/// Cut points that split `bytes` into uneven parts, in the middle of rows of `row_bytes`.
pub fn awkward_cuts(bytes: u64, row_bytes: u64) -> Vec<u64> {
    let r = row_bytes.max(4);
    vec![
        (bytes / 3 + r / 2) / 4 * 4,
        (bytes / 2 + 4) / 4 * 4,
        (bytes * 4 / 5) / 4 * 4,
    ]
}

pub fn rng(seed: u64) -> Rng {
    Rng::new(seed)
}

/// Asserts |got − want| ≤ 1e-4 · max(1, |want|) element by element.
#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = 1e-4 * w.abs().max(1.0);
        assert!(
            (f64::from(g) - w).abs() <= tol,
            "{what}: element {i}: gpu {g} vs reference {w}"
        );
    }
}
