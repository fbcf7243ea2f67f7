//! Helpers for tests and benches: open a device or skip, upload and read back buffers.

use crate::gpu::{Gpu, GpuOptions};

/// Env var that turns "no adapter, skipping" into a test failure (CI sets it to 1).
pub const REQUIRE_ADAPTER_ENV: &str = "GPUMEM_REQUIRE_ADAPTER";

/// Whether `GPUMEM_REQUIRE_ADAPTER=1`: a test that needs an adapter must fail without one.
pub fn adapter_required() -> bool {
    std::env::var(REQUIRE_ADAPTER_ENV).is_ok_and(|v| v.trim() == "1")
}

/// Opens a device for a test. Without an adapter: `None` and a skip notice on stderr,
/// or a panic when `GPUMEM_REQUIRE_ADAPTER=1`, so CI cannot pass by skipping.
pub fn gpu() -> Option<Gpu> {
    match Gpu::new(&GpuOptions::default()) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            if adapter_required() {
                panic!("{REQUIRE_ADAPTER_ENV}=1 but no usable GPU adapter: {e}");
            }
            eprintln!("skipping GPU test: {e} (set {REQUIRE_ADAPTER_ENV}=1 to make this fail)");
            None
        }
    }
}

/// True, with the reason on stderr, when `gpu` runs on wgpu's GL backend, where a test
/// of `what` cannot run: GL never reports an out-of-memory error (allocations over-commit
/// or abort) and has no allocator report. The backend is the adapter's, not `WGPU_BACKEND`.
pub fn skip_on_gl(gpu: &Gpu, what: &str) -> bool {
    let info = gpu.info();
    let gl = info.backend == wgpu::Backend::Gl;
    if gl {
        eprintln!("skipping on the GL backend ({}): {what}", info.name);
    }
    gl
}

/// A storage buffer usable as kernel operand, copy source and copy destination.
pub fn storage_buffer(gpu: &Gpu, bytes: u64) -> wgpu::Buffer {
    gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test storage"),
        size: bytes.max(4),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Writes `data` at `offset` (both 4-byte aligned) through the queue.
pub fn write<T: bytemuck::Pod>(gpu: &Gpu, buffer: &wgpu::Buffer, offset: u64, data: &[T]) {
    if !data.is_empty() {
        gpu.queue
            .write_buffer(buffer, offset, bytemuck::cast_slice(data));
    }
}

/// Reads `len` bytes at `offset` back to the CPU (submits pending writes, waits).
pub fn read<T: bytemuck::Pod>(
    gpu: &Gpu,
    buffer: &wgpu::Buffer,
    offset: u64,
    len: u64,
) -> Result<Vec<T>, String> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("test readback"),
        size: len,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, len);
    gpu.queue.submit([encoder.finish()]);
    let slice = staging.slice(..);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    gpu.wait().map_err(|e| e.to_string())?;
    rx.recv()
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let view = slice.get_mapped_range().map_err(|e| e.to_string())?;
    let out = bytemuck::cast_slice(&view).to_vec();
    drop(view);
    staging.unmap();
    Ok(out)
}

/// Deterministic xorshift numbers in [-1, 1) so tests need no extra crate.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 32) as u32
    }

    pub fn uniform(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    }

    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.uniform()).collect()
    }
}
