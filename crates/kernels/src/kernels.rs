//! [`Kernels`]: one device's pipelines, the limits they plan with, and scratch buffers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::counters::{Counter, Counters, WgpuCounters};
use crate::error::KernelError;
use crate::limits::KernelLimits;
use crate::matmul;
use crate::pieces::{Bind, Operand, segments};
use crate::pipeline::{Cache, Layouts};
use crate::record::Dispatch;
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

/// What [`Kernels`] made from one another share.
struct Shared {
    layouts: Arc<Layouts>,
    cache: Arc<Cache>,
    dummy: wgpu::Buffer,
    uniform_align: u64,
    max_buffer: u64,
    counters: Arc<Counters>,
    pipelines_seen: Arc<AtomicUsize>,
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
        let dummy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpumem-kernels dummy"),
            size: DUMMY_BYTES,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let dl = device.limits();
        let shared = Shared {
            layouts: Arc::new(Layouts::new(device)),
            cache: Arc::default(),
            dummy,
            uniform_align: u64::from(dl.min_uniform_buffer_offset_alignment.max(16)),
            max_buffer: dl.max_buffer_size,
            counters: Arc::default(),
            pipelines_seen: Arc::default(),
        };
        Self::build(device, limits, shared)
    }

    /// Kernels for the same device that plan with `limits`, sharing these pipelines (so
    /// nothing is compiled twice).
    pub fn reuse_with_limits(&self, limits: KernelLimits) -> Result<Self, KernelError> {
        let shared = Shared {
            layouts: Arc::clone(&self.layouts),
            cache: Arc::clone(&self.cache),
            dummy: self.dummy.clone(),
            uniform_align: self.uniform_align,
            max_buffer: self.max_buffer,
            counters: Arc::clone(&self.counters),
            pipelines_seen: Arc::clone(&self.pipelines_seen),
        };
        Self::build(&self.device, limits, shared)
    }

    fn build(
        device: &wgpu::Device,
        limits: KernelLimits,
        shared: Shared,
    ) -> Result<Self, KernelError> {
        let limits = limits.within(device);
        let mut k = Kernels {
            device: device.clone(),
            limits,
            uniform_align: shared.uniform_align,
            max_buffer: shared.max_buffer,
            dummy: shared.dummy,
            scratch: Mutex::new(Vec::new()),
            layouts: shared.layouts,
            cache: shared.cache,
            subgroups: false,
            wg: matmul::workgroup_width(device),
            split_target: matmul::split_target(limits.cpu_plans),
            counters: shared.counters,
            active: Mutex::new(None),
            pipelines_seen: shared.pipelines_seen,
        };
        k.subgroups = matmul::init(&k, matmul::wants_subgroups(device, &limits))?;
        Ok(k)
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

    /// A dispatch of `entry` in `source` (a hand-written WGSL file whose bindings, in
    /// order, are the float32 quads `names`, then its uniform), on `layout`: how the fused
    /// kernels (matmul/fused.rs, foreach.rs, optim_fused.rs) build theirs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn f32_quads_dispatch<'a>(
        &self,
        module: &str,
        source: &str,
        names: &[&str],
        entry: &str,
        layout: &'a (wgpu::BindGroupLayout, wgpu::PipelineLayout),
        storage: Vec<Bind<'a>>,
        writes: u32,
        params: &[u8],
        groups: [u32; 3],
    ) -> Result<Dispatch<'a>, KernelError> {
        let pipeline = self
            .cache
            .get(&self.device, &layout.1, module, entry, &[], || {
                let bindings: Vec<(&str, Store)> = names.iter().map(|&n| (n, Store::F32)).collect();
                let mut s = shader::prelude(shader::Compute::F32, &bindings, shader::Layout::Quads);
                s.push_str(source);
                s
            })?;
        Ok(Dispatch {
            pipeline,
            layout: &layout.0,
            storage,
            writes,
            params: params.to_vec(),
            groups,
        })
    }

    /// Records `fused` where there is one, else runs `separate` (the unfused kernels).
    pub(crate) fn fused_or(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        fused: Option<Dispatch<'_>>,
        separate: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<(), KernelError>,
    ) -> Result<(), KernelError> {
        match fused {
            Some(d) => {
                crate::record::record(self, encoder, &[d]);
                Ok(())
            }
            None => separate(encoder),
        }
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
