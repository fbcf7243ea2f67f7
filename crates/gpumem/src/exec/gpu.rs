//! The `wgpu` backing's executor: each operation resolves its tensors to views of the
//! segment buffers and records WGSL dispatches (gpumem-kernels) into the step's one pending
//! command encoder. Nothing is submitted until data must cross to or from the host, so a
//! training step is one submission and one wait (reading its loss). Dispatches are recorded
//! under the executor's step cache, so a steady step creates no bind group and no buffer.
//!
//! Every dtype the engine stores runs here: float16 (mixed precision's activations and
//! their gradients; native with `SHADER_F16`, packed two per `u32` without), float32, and
//! float64 where the adapter has `SHADER_F64` — without it a float64 tensor's first
//! operation is a clear [`Error::Unsupported`] naming the missing feature. Kernels compute in
//! f32 (f64 when any operand is float64), as the cpu backing does.

mod run;
mod transfer;

use crate::error::Error;
use crate::segments::BufferStore;
use gpumem_kernels::counters::Counter;
use gpumem_kernels::gpu::Gpu;
use gpumem_kernels::{Kernels, StepCache, WgpuCounters};
use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

/// The kernels of one GPU, compiled at first use and shared by the devices given them, so
/// that a fresh device on the same GPU does not compile the shaders again (seconds on
/// lavapipe).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedKernels(Rc<OnceCell<Kernels>>);

impl SharedKernels {
    /// Kernels for `gpu` that plan with `limits`, compiled now (tests use tiny bindings to
    /// exercise tensors processed in pieces).
    #[cfg(any(test, feature = "testing"))]
    pub fn with_limits(gpu: &Gpu, limits: gpumem_kernels::KernelLimits) -> Result<Self, Error> {
        let kernels = Kernels::with_limits(&gpu.device, limits).map_err(building)?;
        Ok(Self(Rc::new(OnceCell::from(kernels))))
    }
}

fn building(e: gpumem_kernels::KernelError) -> Error {
    Error::Device(format!("building the wgpu kernels: {e}"))
}

/// The kernels, the pending commands and what steps reuse, for one device.
pub(crate) struct GpuExecutor {
    gpu: Rc<Gpu>,
    kernels: SharedKernels,
    /// Commands recorded since the last submission: a step's kernels go here and are
    /// submitted together when data next crosses to or from the host.
    pending: RefCell<Option<wgpu::CommandEncoder>>,
    /// The bind groups, uniform ring and counters (the segment store tells it of each
    /// buffer it releases, whose bind groups go with the buffer).
    step: Arc<StepCache>,
    /// The buffer read-backs copy into, grown as needed and kept between steps.
    staging: RefCell<Option<wgpu::Buffer>>,
}

impl GpuExecutor {
    /// The executor of a device over `store`: the store's GPU, `kernels` for it, and a
    /// step cache of its buffers, which the store tells of every buffer it releases.
    pub fn new(store: &mut BufferStore, kernels: SharedKernels) -> Self {
        let gpu = Rc::clone(store.gpu());
        let step = Arc::new(StepCache::new(gpu.info().backend));
        let cache = Arc::clone(&step);
        store.on_release(Box::new(move |buffer| cache.forget(buffer)));
        Self {
            gpu,
            kernels,
            pending: RefCell::new(None),
            step,
            staging: RefCell::new(None),
        }
    }

    /// The kernels (compiling their pipelines the first time).
    pub fn kernels(&self) -> Result<&Kernels, Error> {
        let cell = &self.kernels.0;
        if let Some(k) = cell.get() {
            return Ok(k);
        }
        let k = Kernels::new(&self.gpu.device).map_err(building)?;
        Ok(cell.get_or_init(|| k))
    }

    /// The step cache (bind groups, uniform ring, counters).
    pub fn step_cache(&self) -> &Arc<StepCache> {
        &self.step
    }

    /// What this device's steps have submitted, dispatched and created so far.
    pub fn counters(&self) -> WgpuCounters {
        self.step.counters()
    }

    /// Bind groups cached now.
    pub fn cached_bind_groups(&self) -> usize {
        self.step.len()
    }

    /// Starts timing the kernels with timestamp queries, if the adapter has them.
    pub fn time_kernels(&self) -> bool {
        self.step.time_kernels(&self.gpu.device, &self.gpu.queue)
    }

    /// Device time inside the timed kernels so far.
    pub fn kernel_time(&self) -> Option<gpumem_kernels::KernelTime> {
        self.step.kernel_time()
    }

    /// Starts profiling the kernels (each dispatch timed in a pass of its own).
    pub fn profile_kernels(&self) -> bool {
        self.step.profile_kernels(&self.gpu.device, &self.gpu.queue)
    }

    /// Device time per kernel while profiling.
    pub fn kernel_profile(&self) -> Vec<gpumem_kernels::KernelShare> {
        self.step.kernel_profile()
    }

    pub fn count(&self, counter: Counter, n: u64) {
        self.step.count(counter, n);
    }

    /// The read-back buffer, at least `size` bytes: made (or grown) only when too small.
    pub fn staging(&self, size: u64) -> wgpu::Buffer {
        let mut slot = self.staging.borrow_mut();
        if let Some(b) = slot.as_ref().filter(|b| b.size() >= size) {
            return b.clone();
        }
        let b = self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpumem read-back"),
            size: size.next_power_of_two().max(256),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.count(Counter::StagingBuffer, 1);
        *slot = Some(b.clone());
        b
    }

    /// Records commands into the pending encoder.
    pub fn record(
        &self,
        f: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut pending = self.pending.borrow_mut();
        let encoder = pending.get_or_insert_with(|| {
            self.gpu
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("gpumem step"),
                })
        });
        f(encoder)
    }

    /// Submits what was recorded (if anything), and reports any error the GPU raised so
    /// far — a lost device, or a failure inside the driver — as an error value.
    pub fn flush(&self) -> Result<(), Error> {
        if let Some(mut encoder) = self.pending.borrow_mut().take() {
            self.step.before_submit(&self.gpu.queue);
            self.step.resolve_timing(&mut encoder);
            self.gpu.queue.submit([encoder.finish()]);
            self.count(Counter::Submit, 1);
            self.step.collect_timing(&self.gpu.device);
        }
        self.check()
    }

    /// Errors the device reported since the last check.
    pub fn check(&self) -> Result<(), Error> {
        // Polling runs the device-lost callback if the device went away since.
        let _ = self.gpu.device.poll(wgpu::PollType::Poll);
        if self.gpu.is_lost() {
            return Err(Error::Device("the GPU device was lost".into()));
        }
        let errors = self.gpu.take_errors();
        if errors.is_empty() {
            return Ok(());
        }
        let text: Vec<String> = errors.into_iter().map(|e| e.message).collect();
        Err(Error::Device(format!(
            "the GPU reported: {}",
            text.join("; ")
        )))
    }
}
