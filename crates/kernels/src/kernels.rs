//! [`Kernels`]: one device's pipelines, the limits they plan with, and scratch buffers.
//!
//! Every kernel module builds on this one, so it depends on none of them: creation, which
//! asks matmul to choose its tiled variant, is in `setup.rs`; recording is in `record.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::counters::{Counter, Counters, WgpuCounters};
use crate::error::KernelError;
use crate::limits::KernelLimits;
use crate::pieces::{Bind, Operand, segments};
use crate::pipeline::{Cache, Layouts};
use crate::shader::{self, Store};
use crate::step_cache::StepCache;
use crate::view::{DType, Matrix};

/// Scratch buffer slots (see [`Kernels::scratch`]): below `COLSUM_SLOT`, gathered operands
/// (one per binding slot); then colsum's partial sums, matmul's split-k partial sums, and
/// a float16 C's sums over several reduction pieces, `nll_loss`'s running sum.
pub(crate) const COLSUM_SLOT: usize = 8;
pub(crate) const SPLIT_K_SLOT: usize = 9;
pub(crate) const KACC_SLOT: usize = 10;
pub(crate) const NLL_SLOT: usize = 11;

/// Bytes of the buffer bound where a kernel has no operand: any binding's minimum size
/// (a `vec4<f64>` is 32 bytes).
const DUMMY_BYTES: u64 = 64;

/// The kernels of one device: pipelines (built on first use and cached), the limits they
/// plan with, and scratch buffers for straddling rows and partial sums.
#[derive(Debug)]
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
    pub(crate) cache: Arc<Cache>,
    /// Matmul's tiled kernel uses the subgroup variant.
    pub(crate) subgroups: bool,
    /// Invocations per workgroup of the tiled kernel.
    pub(crate) wg: u32,
    /// Invocations the skinny matmuls' split-k aims for on this device.
    pub(crate) split_target: u64,
    /// Counts of work recorded outside [`Kernels::recording`] (shared like the pipelines).
    counters: Arc<Counters>,
    /// The step cache of the store recording now (see [`Kernels::recording`]).
    active: Mutex<Option<Arc<StepCache>>>,
    /// Pipelines already counted (the cache's size when last looked at).
    pipelines_seen: Arc<AtomicUsize>,
}

/// What [`Kernels`] made from one another share: built once per device, cloned by
/// [`Kernels::reuse_with_limits`] (in `setup.rs`).
pub(crate) struct Shared {
    layouts: Arc<Layouts>,
    cache: Arc<Cache>,
    dummy: wgpu::Buffer,
    uniform_align: u64,
    max_buffer: u64,
    counters: Arc<Counters>,
    pipelines_seen: Arc<AtomicUsize>,
}

impl Shared {
    /// Fresh ones for `device`: no pipeline built yet, nothing counted.
    pub(crate) fn new(device: &wgpu::Device) -> Self {
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpumem-kernels dummy"),
            size: DUMMY_BYTES,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let dl = device.limits();
        Shared {
            layouts: Arc::new(Layouts::new(device)),
            cache: Arc::default(),
            dummy,
            uniform_align: u64::from(dl.min_uniform_buffer_offset_alignment.max(16)),
            max_buffer: dl.max_buffer_size,
            counters: Arc::default(),
            pipelines_seen: Arc::default(),
        }
    }

    /// `k`'s, to share with Kernels that plan with other limits.
    pub(crate) fn of(k: &Kernels) -> Self {
        Shared {
            layouts: Arc::clone(&k.layouts),
            cache: Arc::clone(&k.cache),
            dummy: k.dummy.clone(),
            uniform_align: k.uniform_align,
            max_buffer: k.max_buffer,
            counters: Arc::clone(&k.counters),
            pipelines_seen: Arc::clone(&k.pipelines_seen),
        }
    }
}

impl Kernels {
    /// Kernels on `device` planning with `limits` (already within the device's), before
    /// matmul has chosen its tiled variant: `subgroups` is false until `setup.rs` sets it.
    pub(crate) fn assemble(
        device: &wgpu::Device,
        limits: KernelLimits,
        shared: Shared,
        wg: u32,
        split_target: u64,
    ) -> Self {
        Kernels {
            device: device.clone(),
            limits,
            uniform_align: shared.uniform_align,
            max_buffer: shared.max_buffer,
            dummy: shared.dummy,
            scratch: Mutex::new(Vec::new()),
            layouts: shared.layouts,
            cache: shared.cache,
            subgroups: false,
            wg,
            split_target,
            counters: shared.counters,
            active: Mutex::new(None),
            pipelines_seen: shared.pipelines_seen,
        }
    }

    /// The adapter's largest buffer.
    pub(crate) fn max_buffer(&self) -> u64 {
        self.max_buffer
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

    /// Runs `f` with `cache` as the step cache: what `f` records reuses its bind groups
    /// and packs its parameters into its uniform ring (written by
    /// [`StepCache::before_submit`], which the caller must run before submitting), and is
    /// counted in its counters. Without it, each call creates its own.
    pub fn recording<R>(&self, cache: &Arc<StepCache>, f: impl FnOnce(&Self) -> R) -> R {
        let previous = self.slot().replace(Arc::clone(cache));
        let out = f(self);
        *self.slot() = previous;
        out
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<StepCache>>> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The step cache recording now, if any.
    pub(crate) fn active(&self) -> Option<Arc<StepCache>> {
        self.slot().clone()
    }

    /// Ends the active step cache's shared compute pass ([`StepCache::end_pass`]), if
    /// any: before recording a copy or clear into the encoder.
    pub fn end_pass(&self) {
        if let Some(c) = self.active() {
            c.end_pass();
        }
    }

    /// Counts of the work recorded outside [`Kernels::recording`].
    pub fn counters(&self) -> WgpuCounters {
        self.counters.get()
    }

    /// Bumps `counter` in the active step cache, or in this one's own counters.
    pub(crate) fn count(&self, counter: Counter, n: u64) {
        match self.active() {
            Some(c) => c.count(counter, n),
            None => self.counters.add(counter, n),
        }
    }

    /// Counts the pipelines built since the last look.
    pub(crate) fn count_pipelines(&self) {
        let now = self.cache.len();
        let before = self.pipelines_seen.swap(now, Ordering::Relaxed);
        if now > before {
            self.count(Counter::Pipeline, (now - before) as u64);
        }
    }

    /// The storage of `dtype` on this device, or why there is none.
    pub(crate) fn store(&self, dtype: DType) -> Result<Store, KernelError> {
        shader::store_for(&self.device, self.limits.shader_f16, dtype)
    }

    /// `m`'s binding when it is float32, one span of whole quads starting on a quad: what
    /// the fused kernels bind as `array<vec4<f32>>` (others take the general path).
    pub(crate) fn whole_quads<'a>(
        &self,
        name: &str,
        m: &Matrix<'a>,
    ) -> Result<Option<Bind<'a>>, KernelError> {
        if m.rows == 0 || m.dtype != DType::F32 {
            return Ok(None);
        }
        let op = Operand::new(name, m, &self.limits, 4)?;
        if segments(m.rows, &[&op]).len() != 1 {
            return Ok(None);
        }
        let bind = op.bind(0, m.rows);
        Ok(match bind {
            Bind::Direct {
                quads: true, elem, ..
            } if elem.is_multiple_of(4) => Some(bind),
            _ => None,
        })
    }

    /// A binding for a slot the kernel does not use.
    pub(crate) fn dummy_bind(&self) -> Bind<'_> {
        Bind::Direct {
            buffer: &self.dummy,
            offset: 0,
            size: DUMMY_BYTES,
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
        self.count(Counter::ScratchBuffer, 1);
        all[slot] = Some(b.clone());
        b
    }
}
