//! The `wgpu` backing's segments: wgpu buffers, split into several buffers when a segment
//! is larger than the adapter's `max_buffer_size`.

use crate::alloc::{SegmentStore, StoreError};
use crate::error::Error;
use gpumem_kernels::counters::Counter;
use gpumem_kernels::gpu::Gpu;
use gpumem_kernels::{KernelLimits, Kernels, StepCache, WgpuCounters};
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// The buffers of one segment, in address order; every buffer but the last holds exactly
/// `piece` bytes.
/// How segment buffers are labelled, so the driver's report can tell them from wgpu's own.
pub(crate) const SEGMENT_LABEL: &str = "gpumem segment";

pub(crate) struct SegmentBuffers {
    /// `None` for the unmapped pages of an expandable segment.
    pub buffers: Vec<Option<wgpu::Buffer>>,
    pub piece: u64,
}

pub struct BufferStore {
    pub(crate) gpu: Rc<Gpu>,
    pub(crate) segments: HashMap<u64, SegmentBuffers>,
    /// The kernels, compiled on first use (seconds on lavapipe) and shared by every store
    /// made with [`BufferStore::fresh`].
    kernels: Rc<OnceCell<Kernels>>,
    /// Commands recorded since the last submission: a step's kernels go here and are
    /// submitted together when data next crosses to or from the host.
    pending: RefCell<Option<wgpu::CommandEncoder>>,
    /// This store's bind groups, uniform ring and counters (never shared: its bind groups
    /// hold this store's buffers).
    step: Arc<StepCache>,
    /// The buffer read-backs copy into, grown as needed and kept between steps.
    staging: RefCell<Option<wgpu::Buffer>>,
    /// Bytes per buffer: the adapter's `max_buffer_size`, rounded down to the allocator's
    /// 512-byte granularity so no block starts mid-element.
    piece: u64,
}

impl std::fmt::Debug for BufferStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferStore")
            .field("adapter", &self.gpu.info().name)
            .field("segments", &self.segments.len())
            .field("piece", &self.piece)
            .finish()
    }
}

impl BufferStore {
    pub fn new(gpu: Rc<Gpu>) -> Self {
        Self::with_max_buffer(Rc::clone(&gpu), gpu.limits().max_buffer_size)
    }

    /// A store that never makes a buffer larger than `max_buffer` (tests use a small value
    /// to exercise segments made of several buffers).
    pub fn with_max_buffer(gpu: Rc<Gpu>, max_buffer: u64) -> Self {
        let piece = (max_buffer.min(gpu.limits().max_buffer_size) / 512 * 512).max(512);
        let step = Arc::new(StepCache::new(gpu.info().backend));
        Self {
            gpu,
            segments: HashMap::new(),
            kernels: Rc::new(OnceCell::new()),
            pending: RefCell::new(None),
            step,
            staging: RefCell::new(None),
            piece,
        }
    }

    /// A new, empty store on the same GPU with the same buffer size, sharing the compiled
    /// kernels (for a fresh device without compiling the shaders again).
    pub fn fresh(&self) -> Self {
        Self {
            gpu: Rc::clone(&self.gpu),
            segments: HashMap::new(),
            kernels: Rc::clone(&self.kernels),
            pending: RefCell::new(None),
            step: Arc::new(StepCache::new(self.gpu.info().backend)),
            staging: RefCell::new(None),
            piece: self.piece,
        }
    }

    /// Like [`BufferStore::with_max_buffer`], with kernels that plan with `limits` (tests
    /// use tiny bindings to exercise tensors processed in pieces).
    pub fn with_limits(gpu: Rc<Gpu>, max_buffer: u64, limits: KernelLimits) -> Result<Self, Error> {
        let store = Self::with_max_buffer(gpu, max_buffer);
        let kernels = Kernels::with_limits(&store.gpu.device, limits)
            .map_err(|e| Error::Device(format!("building the wgpu kernels: {e}")))?;
        let _ = store.kernels.set(kernels);
        Ok(store)
    }

    pub fn gpu(&self) -> &Rc<Gpu> {
        &self.gpu
    }

    /// The kernels (compiling their pipelines the first time).
    pub(crate) fn kernels(&self) -> Result<&Kernels, Error> {
        if let Some(k) = self.kernels.get() {
            return Ok(k);
        }
        let k = Kernels::new(&self.gpu.device)
            .map_err(|e| Error::Device(format!("building the wgpu kernels: {e}")))?;
        Ok(self.kernels.get_or_init(|| k))
    }

    /// This store's step cache (bind groups, uniform ring, counters).
    pub(crate) fn step_cache(&self) -> &Arc<StepCache> {
        &self.step
    }

    /// What this store's steps have submitted, dispatched and created so far.
    pub fn counters(&self) -> WgpuCounters {
        self.step.counters()
    }

    /// Bind groups cached now.
    pub fn cached_bind_groups(&self) -> usize {
        self.step.len()
    }

    /// Starts timing this store's kernels with timestamp queries, if the adapter has them.
    pub fn time_kernels(&self) -> bool {
        self.step.time_kernels(&self.gpu.device, &self.gpu.queue)
    }

    /// Device time inside the timed kernels so far.
    pub fn kernel_time(&self) -> Option<gpumem_kernels::KernelTime> {
        self.step.kernel_time()
    }

    /// Starts profiling this store's kernels (each dispatch timed in a pass of its own).
    pub fn profile_kernels(&self) -> bool {
        self.step.profile_kernels(&self.gpu.device, &self.gpu.queue)
    }

    /// Device time per kernel while profiling.
    pub fn kernel_profile(&self) -> Vec<gpumem_kernels::KernelShare> {
        self.step.kernel_profile()
    }

    pub(crate) fn count(&self, counter: Counter, n: u64) {
        self.step.count(counter, n);
    }

    /// The read-back buffer, at least `size` bytes: made (or grown) only when too small.
    pub(crate) fn staging(&self, size: u64) -> wgpu::Buffer {
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
    pub(crate) fn record(
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
    pub(crate) fn flush(&self) -> Result<(), Error> {
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
    pub(crate) fn check(&self) -> Result<(), Error> {
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

    /// Creates one buffer, turning a driver out-of-memory or validation failure into an
    /// error value instead of a panic.
    fn create_buffer(&self, id: u64, size: u64) -> Result<wgpu::Buffer, StoreError> {
        let device = &self.gpu.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{SEGMENT_LABEL} {id}")),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // Pop the innermost scope first.
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = oom.or(validation) {
            buffer.destroy();
            return Err(StoreError::OutOfMemory(format!(
                "wgpu could not create a buffer: {e}"
            )));
        }
        Ok(buffer)
    }
}

impl SegmentStore for BufferStore {
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError> {
        if self.gpu.is_lost() {
            return Err(StoreError::Fatal("the GPU device was lost".into()));
        }
        let mut buffers = Vec::new();
        let mut left = bytes;
        while left > 0 {
            let size = left.min(self.piece);
            // On failure the buffers made so far are dropped, which frees them.
            buffers.push(Some(self.create_buffer(id, size)?));
            left -= size;
        }
        self.segments.insert(
            id,
            SegmentBuffers {
                buffers,
                piece: self.piece,
            },
        );
        Ok(())
    }

    fn release_segment(&mut self, id: u64) {
        // Dropping a buffer frees it once the GPU has finished any work that uses it; the
        // bind groups that bind it go first, so none keeps it alive.
        if let Some(seg) = self.segments.remove(&id) {
            for b in seg.buffers.iter().flatten() {
                self.step.forget(b);
            }
        }
    }

    /// An expandable segment's pages are buffers of one page each (or equal parts of a
    /// page where the adapter's buffers are smaller), made when mapped.
    fn map_pages(&mut self, id: u64, offset: u64, bytes: u64, page: u64) -> Result<(), StoreError> {
        if self.gpu.is_lost() {
            return Err(StoreError::Fatal("the GPU device was lost".into()));
        }
        let piece = page_piece(page, self.piece);
        let (first, end) = (offset / piece, (offset + bytes).div_ceil(piece));
        // On failure the buffers made so far are dropped, which frees them.
        let made = (first..end)
            .map(|_| self.create_buffer(id, piece))
            .collect::<Result<Vec<_>, _>>()?;
        let seg = self.segments.entry(id).or_insert_with(|| SegmentBuffers {
            buffers: Vec::new(),
            piece,
        });
        let end = end as usize;
        if seg.buffers.len() < end {
            seg.buffers.resize_with(end, || None);
        }
        for (slot, b) in seg.buffers[first as usize..end].iter_mut().zip(made) {
            *slot = Some(b);
        }
        Ok(())
    }

    fn unmap_pages(&mut self, id: u64, offset: u64, bytes: u64) {
        let Some(seg) = self.segments.get_mut(&id) else {
            return;
        };
        let (first, end) = (offset / seg.piece, (offset + bytes).div_ceil(seg.piece));
        let end = (end as usize).min(seg.buffers.len());
        for slot in seg.buffers.iter_mut().take(end).skip(first as usize) {
            if let Some(b) = slot.take() {
                self.step.forget(&b);
            }
        }
        while seg.buffers.last().is_some_and(Option::is_none) {
            seg.buffers.pop();
        }
    }
}

impl crate::Device {
    /// What the wgpu backing submitted, dispatched and created so far (`None` on the other
    /// backings): subtract two snapshots for one step's work.
    pub fn wgpu_counters(&self) -> Option<WgpuCounters> {
        match self.borrow().alloc.store() {
            crate::device::Backing::Wgpu(store) => Some(store.counters()),
            _ => None,
        }
    }

    /// Times the wgpu backing's kernels with timestamp queries from now on (each submission
    /// then waits for the device); false where the adapter has none or the backing is not
    /// wgpu. For benches.
    pub fn time_kernels(&self) -> bool {
        match self.borrow().alloc.store() {
            crate::device::Backing::Wgpu(store) => store.time_kernels(),
            _ => false,
        }
    }

    /// Device time inside the timed kernels so far (see [`crate::Device::time_kernels`]).
    pub fn kernel_time(&self) -> Option<gpumem_kernels::KernelTime> {
        match self.borrow().alloc.store() {
            crate::device::Backing::Wgpu(store) => store.kernel_time(),
            _ => None,
        }
    }

    /// [`crate::Device::time_kernels`] with every dispatch in a timed pass of its own,
    /// summed by kernel ([`crate::Device::kernel_profile`]): which kernels cost most (a pass
    /// each costs more than the step's shared pass). For benches.
    pub fn profile_kernels(&self) -> bool {
        match self.borrow().alloc.store() {
            crate::device::Backing::Wgpu(store) => store.profile_kernels(),
            _ => false,
        }
    }

    /// Device time per kernel while profiling (empty when not profiling).
    pub fn kernel_profile(&self) -> Vec<gpumem_kernels::KernelShare> {
        match self.borrow().alloc.store() {
            crate::device::Backing::Wgpu(store) => store.kernel_profile(),
            _ => Vec::new(),
        }
    }

    /// Bind groups the wgpu backing holds now (`None` on the other backings).
    pub fn wgpu_cached_bind_groups(&self) -> Option<usize> {
        match self.borrow().alloc.store() {
            crate::device::Backing::Wgpu(store) => Some(store.cached_bind_groups()),
            _ => None,
        }
    }
}

/// The largest part of a `page` that is a multiple of 512 B, divides the page evenly and
/// fits a buffer of `max` bytes: pages are whole numbers of buffers, so no buffer spans two
/// pages that are mapped and unmapped apart.
fn page_piece(page: u64, max: u64) -> u64 {
    (1..=page / 512)
        .map(|parts| page / parts)
        .find(|&p| p <= max && page.is_multiple_of(p) && p.is_multiple_of(512))
        .unwrap_or(512)
}

#[cfg(test)]
mod tests {
    use super::page_piece;

    const MIB: u64 = 1 << 20;

    #[test]
    fn pages_are_whole_numbers_of_buffers() {
        assert_eq!(page_piece(20 * MIB, 1 << 30), 20 * MIB);
        assert_eq!(page_piece(2 * MIB, 3 * MIB), 2 * MIB);
        // 20 MiB in buffers of at most 3 MiB: eight of 2.5 MiB.
        assert_eq!(page_piece(20 * MIB, 3 * MIB), 5 * MIB / 2);
        assert_eq!(page_piece(20 * MIB, 16 << 10), 16 << 10);
    }
}
