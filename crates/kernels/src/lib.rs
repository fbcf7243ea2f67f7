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
//! `SHADER_F64` and is refused as [`KernelError::Unsupported`] without it. Shaders are
//! generated per combination of storage types at its first use (see `shader.rs`) and
//! cached; [`Kernels::reuse_with_limits`] shares the cache.

pub mod bench;
pub mod elementwise;
pub mod gpu;
pub mod loss;
pub mod matmul;
pub mod optim;
pub(crate) mod pieces;
pub(crate) mod record;
pub mod reduce;
pub(crate) mod shader;
pub mod testing;
pub mod view;

use std::sync::{Arc, Mutex, PoisonError};

pub use gpu::{CapturedError, CapturedErrorKind, Gpu, GpuError, GpuOptions};
pub use matmul::{Gemm, MatmulKernel};
pub use optim::Adam;
pub use view::{DType, Matrix, Part};

/// The limits kernels plan with. [`Kernels::new`] reads them from the device;
/// [`Kernels::with_limits`] lets tests force tighter ones (e.g. 4 KiB bindings) so that
/// pieces, straddling rows and grid-stride loops run on small data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelLimits {
    /// Largest storage binding in bytes (`max_storage_buffer_binding_size`).
    pub max_binding: u64,
    /// Storage binding offsets are multiples of this (`min_storage_buffer_offset_alignment`).
    pub offset_align: u64,
    /// Largest workgroup count per dimension (`max_compute_workgroups_per_dimension`).
    pub max_workgroups: u32,
    /// Use subgroup operations in matmul when the device has `Features::SUBGROUP`
    /// and subgroups of at least 8 invocations.
    pub subgroups: bool,
    /// Store float16 natively (`array<f16>`) when the device has `Features::SHADER_F16`;
    /// false forces the packed `u32` storage that devices without it use.
    pub shader_f16: bool,
}

impl KernelLimits {
    /// The device's own limits.
    pub fn of(device: &wgpu::Device) -> Self {
        let l = device.limits();
        KernelLimits {
            // Capped at 4 GiB so element offsets and strides fit the shaders' u32s.
            max_binding: l
                .max_storage_buffer_binding_size
                .min(l.max_buffer_size)
                .min(u64::from(u32::MAX))
                .max(32)
                & !31,
            offset_align: u64::from(l.min_storage_buffer_offset_alignment.max(4)),
            max_workgroups: l.max_compute_workgroups_per_dimension.max(1),
            subgroups: true,
            shader_f16: true,
        }
    }

    /// These limits made no looser than the device's.
    fn within(self, device: &wgpu::Device) -> Self {
        let d = Self::of(device);
        KernelLimits {
            // Whole 32-byte blocks, so bindings rounded up to whole quads stay within it.
            max_binding: self.max_binding.clamp(32, d.max_binding) & !31,
            offset_align: self.offset_align.max(d.offset_align).next_power_of_two(),
            max_workgroups: self.max_workgroups.clamp(1, d.max_workgroups),
            subgroups: self.subgroups,
            shader_f16: self.shader_f16,
        }
    }
}

/// A kernel call that cannot be planned. Never a panic, never a wgpu error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    #[error("shape mismatch: {0}")]
    Shape(String),
    #[error("{name}: expected dtype {expected:?}, got {got:?}")]
    DType {
        name: String,
        expected: DType,
        got: DType,
    },
    #[error("{name}: bad parts: {reason}")]
    Parts { name: String, reason: String },
    #[error("{name}: one row is {row_bytes} bytes, more than a binding may hold ({max_binding})")]
    RowTooLarge {
        name: String,
        row_bytes: u64,
        max_binding: u64,
    },
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("creating pipelines failed: {0}")]
    Pipeline(String),
}

/// The kernels of one device: pipelines (built on first use and cached), the limits they
/// plan with, and scratch buffers for straddling rows and partial sums.
pub struct Kernels {
    pub(crate) device: wgpu::Device,
    pub(crate) limits: KernelLimits,
    pub(crate) uniform_align: u64,
    max_buffer: u64,
    /// Bound where a kernel has no operand for a binding (e.g. no bias).
    pub(crate) dummy: wgpu::Buffer,
    scratch: Mutex<Vec<Option<wgpu::Buffer>>>,
    // Shared (Arc) between Kernels made by `reuse_with_limits`: lavapipe compiles each
    // pipeline object at its first dispatch, seconds each.
    pub(crate) layouts: Arc<Layouts>,
    pub(crate) cache: Arc<shader::Cache>,
    /// Matmul's tiled kernel uses the subgroup variant.
    pub(crate) subgroups: bool,
    /// Invocations per workgroup of the tiled kernel.
    pub(crate) wg: u32,
}

/// Bind group layouts shared by kernel families: `n` read-write storage buffers then
/// one uniform. Read-write everywhere because tensors of one call may share a buffer
/// (one allocator segment), and wgpu rejects a buffer bound read-only and writable at once.
pub(crate) struct Layouts {
    pub storage2: (wgpu::BindGroupLayout, wgpu::PipelineLayout),
    pub storage4: (wgpu::BindGroupLayout, wgpu::PipelineLayout),
}

impl Kernels {
    /// Kernels for `device`, planning with the device's limits. Builds the float32 tiled
    /// matmul (to learn whether its subgroup variant works); every other pipeline is built
    /// at its first use.
    pub fn new(device: &wgpu::Device) -> Result<Self, KernelError> {
        Self::with_limits(device, KernelLimits::of(device))
    }

    /// Like [`Kernels::new`] but plans with `limits` (clamped to the device's).
    pub fn with_limits(device: &wgpu::Device, limits: KernelLimits) -> Result<Self, KernelError> {
        let layouts = Arc::new(Layouts {
            storage2: layout(device, 2),
            storage4: layout(device, 4),
        });
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpumem-kernels dummy"),
            // Large enough for any binding's minimum size (a vec4<f64> is 32 bytes).
            size: 64,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let dl = device.limits();
        Self::build(
            device,
            limits,
            layouts,
            Arc::default(),
            dummy,
            u64::from(dl.min_uniform_buffer_offset_alignment.max(16)),
            dl.max_buffer_size,
        )
    }

    /// Kernels for the same device that plan with `limits`, sharing these pipelines (so
    /// nothing is compiled twice).
    pub fn reuse_with_limits(&self, limits: KernelLimits) -> Result<Self, KernelError> {
        Self::build(
            &self.device,
            limits,
            Arc::clone(&self.layouts),
            Arc::clone(&self.cache),
            self.dummy.clone(),
            self.uniform_align,
            self.max_buffer,
        )
    }

    fn build(
        device: &wgpu::Device,
        limits: KernelLimits,
        layouts: Arc<Layouts>,
        cache: Arc<shader::Cache>,
        dummy: wgpu::Buffer,
        uniform_align: u64,
        max_buffer: u64,
    ) -> Result<Self, KernelError> {
        let limits = limits.within(device);
        let mut k = Kernels {
            device: device.clone(),
            limits,
            uniform_align,
            max_buffer,
            dummy,
            scratch: Mutex::new(Vec::new()),
            layouts,
            cache,
            subgroups: false,
            wg: matmul::workgroup_width(device),
        };
        k.subgroups = matmul::init(&k, matmul::wants_subgroups(device, &limits))?;
        Ok(k)
    }

    pub fn limits(&self) -> &KernelLimits {
        &self.limits
    }

    /// True when matmul uses the subgroup-broadcast variant of the tiled kernel.
    pub fn uses_subgroups(&self) -> bool {
        self.subgroups
    }

    /// True when float16 operands are stored natively (`SHADER_F16`), false when packed.
    pub fn uses_native_f16(&self) -> bool {
        self.limits.shader_f16 && self.device.features().contains(wgpu::Features::SHADER_F16)
    }

    /// True when float64 operands are supported (`SHADER_F64`).
    pub fn supports_f64(&self) -> bool {
        self.device.features().contains(wgpu::Features::SHADER_F64)
    }

    /// How many pipelines have been built so far (shared with `reuse_with_limits`).
    pub fn pipelines_built(&self) -> usize {
        self.cache.len()
    }

    /// The storage of `dtype` on this device, or why there is none.
    pub(crate) fn store(&self, dtype: DType) -> Result<shader::Store, KernelError> {
        shader::store_for(&self.device, self.limits.shader_f16, dtype)
    }

    /// A binding for a slot the kernel does not use.
    pub(crate) fn dummy_bind(&self) -> pieces::Bind<'_> {
        pieces::Bind::Direct {
            buffer: &self.dummy,
            offset: 0,
            size: 64,
            elem: 0,
            quads: true,
        }
    }

    /// Scratch buffer `slot`, at least `size` bytes. Reuse is safe because every use is
    /// copy-in, dispatch, copy-out in encoder order; a grown buffer replaces the old one,
    /// which stays alive as long as recorded commands reference it.
    pub(crate) fn scratch(&self, slot: usize, size: u64) -> wgpu::Buffer {
        let mut all = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        if all.len() <= slot {
            all.resize(slot + 1, None);
        }
        if let Some(b) = &all[slot]
            && b.size() >= size
        {
            return b.clone();
        }
        let size = size
            .next_power_of_two()
            .clamp(256, self.max_buffer.max(size));
        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpumem-kernels scratch"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        all[slot] = Some(b.clone());
        b
    }
}

fn layout(device: &wgpu::Device, storage: u32) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
    let mut entries: Vec<wgpu::BindGroupLayoutEntry> = (0..storage)
        .map(|binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    entries.push(wgpu::BindGroupLayoutEntry {
        binding: storage,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    });
    let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("gpumem-kernels layout"),
        entries: &entries,
    });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("gpumem-kernels pipeline layout"),
        bind_group_layouts: &[Some(&bgl)],
        immediate_size: 0,
    });
    (bgl, pl)
}

/// Compiles `source` inside a validation error scope, so a shader the device rejects
/// becomes a [`KernelError`] instead of a stored wgpu error and silently broken kernels.
pub(crate) fn shader_module(
    device: &wgpu::Device,
    label: &str,
    source: &str,
) -> Result<wgpu::ShaderModule, KernelError> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    match pollster::block_on(scope.pop()) {
        None => Ok(module),
        Some(e) => Err(KernelError::Pipeline(format!("{label}: {e}"))),
    }
}

/// The pipeline of `entry` in `module`, likewise inside a validation error scope.
pub(crate) fn compute_pipeline(
    device: &wgpu::Device,
    label: &str,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    entry: &str,
    constants: &[(&str, f64)],
) -> Result<wgpu::ComputePipeline, KernelError> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            zero_initialize_workgroup_memory: true,
        },
        cache: None,
    });
    match pollster::block_on(scope.pop()) {
        None => Ok(pipeline),
        Some(e) => Err(KernelError::Pipeline(format!("{label}: {e}"))),
    }
}
