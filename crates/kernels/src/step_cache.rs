//! What a device's recorded steps reuse instead of creating per kernel call: bind groups
//! (keyed on the layout and the exact buffer ranges bound) and a ring of uniform buffers
//! that the step's kernel parameters are packed into and written with one
//! `queue.write_buffer` per ring buffer at submission.
//!
//! The caching allocator hands the same blocks back each step and the parameters land at
//! the same ring offsets (the cursor restarts at each submission), so from the second step
//! every bind group is a hit (on wgpu's GL backend, only within one submission: see
//! `per_submission`). One cache per device store: the store calls
//! [`StepCache::forget`] when it drops a buffer, so no entry keeps a released segment alive.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::counters::{Counter, Counters, WgpuCounters};
use crate::timing::{KernelShare, KernelTime, Timing};

/// At most this many bind groups are kept; past it the cache starts over (a bound, not a
/// tuning: the lesson's step uses a few dozen).
pub const MAX_BIND_GROUPS: usize = 4096;

/// Bytes of one ring buffer (less where the adapter's buffers are smaller).
const RING_BYTES: u64 = 64 << 10;

/// A bind group's identity: its layout and `(buffer, offset, size)` per binding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct GroupKey {
    layout: wgpu::BindGroupLayout,
    entries: Vec<(wgpu::Buffer, u64, u64)>,
}

/// One uniform ring buffer and the bytes staged for it this submission.
#[derive(Debug)]
struct Ring {
    buffer: wgpu::Buffer,
    staged: Vec<u8>,
}

#[derive(Debug, Default)]
struct Inner {
    groups: HashMap<GroupKey, wgpu::BindGroup>,
    rings: Vec<Ring>,
    /// The ring being filled this submission (its `staged.len()` is the cursor).
    current: usize,
}

/// Bind groups and uniforms reused across a device's steps, and the counters of the work
/// recorded with it. See the module docs.
#[derive(Debug, Default)]
pub struct StepCache {
    counters: Counters,
    inner: Mutex<Inner>,
    /// The compute pass the recorded kernels share until the next non-kernel command or
    /// submission (see [`StepCache::end_pass`]): on lavapipe a pass of its own costs each
    /// kernel call ~15–35 µs more than a dispatch in a shared one (5–7 µs).
    pass: Mutex<Option<wgpu::ComputePass<'static>>>,
    /// Bind groups are dropped at each submission: on wgpu's GL backend, a bind group
    /// reused in a later submission gave results off by ~1e-4 relative (as if it read
    /// an earlier submission's parameters; not root-caused), where new ones are exact.
    per_submission: bool,
    /// Timestamps around each pass, when asked for ([`StepCache::time_kernels`]).
    timing: Mutex<Option<Timing>>,
    /// Each dispatch in a timed pass of its own, by kernel ([`StepCache::profile_kernels`]).
    profiling: std::sync::atomic::AtomicBool,
}

impl StepCache {
    /// A cache for a device on `backend`.
    pub fn new(backend: wgpu::Backend) -> Self {
        StepCache {
            per_submission: backend == wgpu::Backend::Gl,
            ..Self::default()
        }
    }

    /// What was counted so far on this device.
    pub fn counters(&self) -> WgpuCounters {
        self.counters.get()
    }

    pub fn count(&self, counter: Counter, n: u64) {
        self.counters.add(counter, n);
    }

    /// Bind groups cached now.
    pub fn len(&self) -> usize {
        self.lock().groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops every bind group that binds `buffer` (the store is releasing it).
    pub fn forget(&self, buffer: &wgpu::Buffer) {
        self.lock()
            .groups
            .retain(|k, _| !k.entries.iter().any(|(b, _, _)| b == buffer));
    }

    /// Writes the parameters staged since the last submission into the ring buffers (one
    /// `write_buffer` per ring buffer used) and restarts the cursor. Call right before
    /// submitting: queue writes land before the next submission's commands and after the
    /// earlier ones', so the ring is reused safely.
    pub fn before_submit(&self, queue: &wgpu::Queue) {
        self.end_pass();
        let mut inner = self.lock();
        let mut writes = 0;
        for ring in inner.rings.iter_mut().filter(|r| !r.staged.is_empty()) {
            queue.write_buffer(&ring.buffer, 0, &ring.staged);
            ring.staged.clear();
            writes += 1;
        }
        inner.current = 0;
        if self.per_submission {
            inner.groups.clear();
        }
        drop(inner);
        self.count(Counter::BufferWrite, writes);
    }

    /// Times every shared compute pass from now on with timestamp queries (the device's own
    /// clock), if the device has them; returns whether it does. Each submission then waits
    /// for the device: for measuring, not for training.
    pub fn time_kernels(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> bool {
        let mut timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
        if timing.is_none() {
            *timing = Timing::new(device, queue);
        }
        timing.is_some()
    }

    /// Like [`StepCache::time_kernels`], and from now on every dispatch gets a timed pass
    /// of its own, its time summed by kernel ([`StepCache::kernel_profile`]). A pass per
    /// dispatch costs more than a shared one (on lavapipe ~15–35 µs), so the profile says
    /// which kernels cost most, not what a step costs.
    pub fn profile_kernels(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> bool {
        let on = self.time_kernels(device, queue);
        self.profiling
            .store(on, std::sync::atomic::Ordering::Relaxed);
        on
    }

    pub(crate) fn profiling(&self) -> bool {
        self.profiling.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Device time per kernel while profiling, in the order first met.
    pub fn kernel_profile(&self) -> Vec<KernelShare> {
        let timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
        timing
            .as_ref()
            .map(|t| t.profile().to_vec())
            .unwrap_or_default()
    }

    /// Device time inside the timed passes so far (`None` when not timing).
    pub fn kernel_time(&self) -> Option<KernelTime> {
        let timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
        timing.as_ref().map(Timing::totals)
    }

    /// Records the resolve of this submission's timestamps into `encoder`: call after
    /// [`StepCache::before_submit`], before finishing the encoder.
    pub fn resolve_timing(&self, encoder: &mut wgpu::CommandEncoder) {
        let timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = timing.as_ref() {
            t.resolve(encoder);
        }
    }

    /// After a submission: adds its passes' time (waits for the device when timing).
    pub fn collect_timing(&self, device: &wgpu::Device) {
        let mut timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = timing.as_mut() {
            t.collect(device);
        }
    }

    /// Ends the shared compute pass, if one is open. The encoder is locked while it is:
    /// call this before recording anything but kernels into it (copies, clears) and
    /// before finishing it ([`StepCache::before_submit`] does).
    pub fn end_pass(&self) {
        let pass = self
            .pass
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(pass);
    }

    /// Runs `f` on the shared compute pass, begun on `encoder` if none is open. The caller
    /// records into one encoder until it submits (the engine's store: one pending encoder).
    pub(crate) fn with_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        f: impl FnOnce(&mut wgpu::ComputePass<'static>),
    ) {
        let mut slot = self.pass.lock().unwrap_or_else(PoisonError::into_inner);
        let pass = slot.get_or_insert_with(|| {
            let mut timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
            encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("gpumem-kernels step"),
                    timestamp_writes: timing.as_mut().and_then(Timing::next_pass),
                })
                .forget_lifetime()
        });
        f(pass);
    }

    /// Runs `f` on a timed pass of its own, named `kernel` in the profile.
    pub(crate) fn with_own_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        kernel: String,
        f: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) {
        self.end_pass();
        let mut timing = self.timing.lock().unwrap_or_else(PoisonError::into_inner);
        let writes = timing.as_mut().and_then(|t| t.next_named_pass(kernel));
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("gpumem-kernels profiled"),
            timestamp_writes: writes,
        });
        f(&mut pass);
    }

    /// Stages `bytes` at the next `align`ed slot of the ring: the buffer and offset to bind.
    pub(crate) fn uniforms(
        &self,
        device: &wgpu::Device,
        align: u64,
        max_buffer: u64,
        bytes: &[u8],
    ) -> (wgpu::Buffer, u64) {
        let len = (bytes.len() as u64).next_multiple_of(align);
        let cap = RING_BYTES.min(max_buffer).max(len);
        let mut inner = self.lock();
        loop {
            let i = inner.current;
            if i == inner.rings.len() {
                let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpumem-kernels uniform ring"),
                    size: cap,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                self.count(Counter::UniformBuffer, 1);
                inner.rings.push(Ring {
                    buffer,
                    staged: Vec::new(),
                });
            }
            let ring = &mut inner.rings[i];
            let at = ring.staged.len() as u64;
            if at + len <= ring.buffer.size() {
                ring.staged.extend_from_slice(bytes);
                ring.staged.resize((at + len) as usize, 0);
                return (ring.buffer.clone(), at);
            }
            inner.current += 1;
        }
    }

    /// The bind group of `layout` over `entries`, created on a miss.
    pub(crate) fn bind_group(
        &self,
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        entries: &[(&wgpu::Buffer, u64, u64)],
    ) -> wgpu::BindGroup {
        let key = GroupKey {
            layout: layout.clone(),
            entries: entries.iter().map(|&(b, o, s)| (b.clone(), o, s)).collect(),
        };
        let mut inner = self.lock();
        if let Some(g) = inner.groups.get(&key) {
            return g.clone();
        }
        let group = create_bind_group(device, layout, entries);
        self.count(Counter::BindGroup, 1);
        if inner.groups.len() >= MAX_BIND_GROUPS {
            inner.groups.clear();
        }
        inner.groups.insert(key, group.clone());
        group
    }
}

/// A bind group binding `entries[i]` at binding `i`.
pub(crate) fn create_bind_group(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    entries: &[(&wgpu::Buffer, u64, u64)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = entries
        .iter()
        .enumerate()
        .map(|(i, &(buffer, offset, size))| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset,
                size: wgpu::BufferSize::new(size),
            }),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout,
        entries: &entries,
    })
}
