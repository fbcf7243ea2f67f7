//! WGSL compute kernels for gpumem's MLP.
//!
//! Kernels never allocate tensors: they take [`Matrix`] views of buffers the engine's
//! caching allocator owns and record compute passes into the caller's encoder, so a whole
//! training step is one submission. Every kernel respects the device limits it was built
//! with ([`KernelLimits`]): operands are cut into pieces that fit a binding (see
//! `pieces.rs`), rows straddling two buffers go through a scratch buffer, and shaders walk
//! their work with grid-stride loops instead of exceeding the workgroup-count limit.
//!
//! ```no_run
//! # use gpumem_kernels::*;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gpu = Gpu::new(&GpuOptions::default())?;
//! let kernels = Kernels::new(&gpu.device)?;
//! # let (x_buf, w_buf, z_buf) = (gpumem_kernels::testing::storage_buffer(&gpu, 64),
//! #     gpumem_kernels::testing::storage_buffer(&gpu, 64), gpumem_kernels::testing::storage_buffer(&gpu, 64));
//! let (x, w, z) = ([Part { buffer: &x_buf, offset: 0, len: 64 }],
//!                  [Part { buffer: &w_buf, offset: 0, len: 64 }],
//!                  [Part { buffer: &z_buf, offset: 0, len: 64 }]);
//! let mut encoder = gpu.device.create_command_encoder(&Default::default());
//! // Z = X·W, then Z = relu(Z), recorded; nothing runs until the submit.
//! let g = Gemm { a: Matrix::new(&x, 4, 4), trans_a: false, b: Matrix::new(&w, 4, 4),
//!                trans_b: false, c: Matrix::new(&z, 4, 4), accumulate: false, bias: None };
//! kernels.matmul(&mut encoder, &g)?;
//! kernels.relu(&mut encoder, &g.c, &g.c)?;
//! gpu.queue.submit([encoder.finish()]);
//! # Ok(()) }
//! ```
//!
//! # Element types
//!
//! Every float operand may be float32, float16 or float64, each its own ([`DType`]):
//! kernels convert on load and compute in f32, or in f64 when any operand is float64.
//! float16 is native (`SHADER_F16`) where the device has it and
//! [`KernelLimits::shader_f16`] allows it, packed two per `u32` elsewhere; float64 needs
//! `SHADER_F64` and is refused as [`KernelError::Unsupported`] without it (but
//! [`Kernels::fill`], which copies bytes then). Class labels
//! are u32 ([`Matrix::labels`]) or int64 ([`Matrix::labels_i64`], read as u32 words).
//! Shaders are generated per combination of storage types at its first use (see
//! `shader.rs`) and cached; [`Kernels::reuse_with_limits`] shares the cache.
//!
//! # Backends
//!
//! Which of these shader variants each wgpu backend is expected to run (float64 has no
//! Metal form; float16 and subgroups vary), and what is checked without an adapter (every
//! variant through naga, into every backend's language) and on one (Vulkan, and GL in
//! CI): see the crate's `README.md`.

#[cfg(feature = "bench")]
pub mod bench;
pub mod counters;
pub mod elementwise;
mod error;
pub mod foreach;
pub mod gpu;
mod kernels;
mod limits;
pub mod loss;
pub mod matmul;
pub mod optim;
pub mod optim_fused;
pub(crate) mod pieces;
pub(crate) mod pipeline;
pub(crate) mod record;
pub mod reduce;
mod setup;
pub(crate) mod shader;
pub mod step_cache;
#[cfg(test)]
mod support;
pub mod ternary;
#[cfg(feature = "testing")]
pub mod testing;
pub mod timing;
#[cfg(test)]
mod variants;
pub mod view;
pub mod xent;

pub use counters::WgpuCounters;
pub use error::KernelError;
pub use gpu::{CapturedError, CapturedErrorKind, Gpu, GpuError, GpuOptions};
pub use kernels::Kernels;
pub use limits::KernelLimits;
pub use matmul::{Gemm, MatmulKernel};
pub use optim::Adam;
pub use step_cache::StepCache;
pub use timing::{KernelShare, KernelTime};
pub use view::{DType, Matrix, Part};
