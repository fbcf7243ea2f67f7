//! Shared device, tensors placed in buffers in awkward ways, and the tolerance check.

use std::sync::OnceLock;

use gpumem_kernels::testing::{self, Rng};
use gpumem_kernels::{DType, Gpu, KernelLimits, Kernels, Matrix, Part};

pub struct Ctx {
    pub gpu: Gpu,
    /// Planned with the device's own limits.
    pub full: Kernels,
    /// Planned with tiny limits: pieces and grid-stride loops on small data.
    pub tiny: Kernels,
    /// Tiny limits and no subgroups: the plain tiled kernel.
    pub plain: Kernels,
}

/// The shared context, or None (test skipped) without an adapter.
pub fn ctx() -> Option<&'static Ctx> {
    static CTX: OnceLock<Option<Ctx>> = OnceLock::new();
    CTX.get_or_init(|| {
        let gpu = testing::gpu()?;
        let full = Kernels::new(&gpu.device).expect("kernels");
        let tiny_limits = KernelLimits {
            max_binding: 4096,
            offset_align: 256,
            max_workgroups: 3,
            subgroups: true,
            shader_f16: true,
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
        Some(Ctx {
            gpu,
            full,
            tiny,
            plain,
        })
    })
    .as_ref()
}

impl Ctx {
    /// Every configuration a kernel should be checked under.
    pub fn all(&self) -> [(&'static str, &Kernels); 3] {
        [
            ("full", &self.full),
            ("tiny", &self.tiny),
            ("plain", &self.plain),
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

/// A tensor's bytes spread over one buffer per part, each part `GUARD` bytes in and
/// followed by `GUARD` bytes of sentinels.
pub struct Stored {
    buffers: Vec<wgpu::Buffer>,
    lens: Vec<u64>,
    /// Where each part starts in its buffer.
    starts: Vec<u64>,
}

impl Stored {
    /// `cuts`: byte positions (multiples of 4) where a new part begins.
    pub fn new<T: bytemuck::Pod>(ctx: &Ctx, data: &[T], cuts: &[u64]) -> Stored {
        let bytes: &[u8] = bytemuck::cast_slice(data);
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
            let size = start + len + GUARD;
            let buffer = testing::storage_buffer(&ctx.gpu, size);
            let fill = vec![SENTINEL; (size / 4) as usize];
            testing::write(&ctx.gpu, &buffer, 0, &fill);
            testing::write(
                &ctx.gpu,
                &buffer,
                start,
                &bytes[w[0] as usize..w[1] as usize],
            );
            s.buffers.push(buffer);
            s.lens.push(len);
            s.starts.push(start);
        }
        s
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

    /// Reads the tensor back and checks the sentinels around every part.
    pub fn read<T: bytemuck::Pod>(&self, ctx: &Ctx) -> Vec<T> {
        let mut bytes: Vec<u8> = Vec::new();
        for ((b, &len), &start) in self.buffers.iter().zip(&self.lens).zip(&self.starts) {
            let all: Vec<f32> = testing::read(&ctx.gpu, b, 0, b.size()).expect("read");
            let (s, e) = ((start / 4) as usize, ((start + len) / 4) as usize);
            assert!(
                all[..s].iter().chain(&all[e..]).all(|&x| x == SENTINEL),
                "a kernel wrote outside its tensor"
            );
            bytes.extend_from_slice(bytemuck::cast_slice(&all[s..e]));
        }
        bytemuck::cast_slice(&bytes).to_vec()
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
