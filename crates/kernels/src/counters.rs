//! Counts of the wgpu work a step costs beyond its kernels: what a training step submits,
//! dispatches and creates. A bench reads them per step; tests assert the steady state
//! creates nothing.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of the counters (subtract two for the work in between).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WgpuCounters {
    /// Command buffers submitted to the queue.
    pub submits: u64,
    pub dispatches: u64,
    pub bind_groups: u64,
    pub pipelines: u64,
    /// Buffers created for kernel parameters.
    pub uniform_buffers: u64,
    /// Buffers created to read data back or to stage a fill pattern.
    pub staging_buffers: u64,
    /// Scratch buffers created (gathered operands, partial sums), grown or new.
    pub scratch_buffers: u64,
    /// `queue.write_buffer` calls (tensor uploads and kernel parameters).
    pub buffer_writes: u64,
    /// Waits for data copied back to the host.
    pub read_backs: u64,
    /// Nanoseconds spent in `queue.submit` for read-backs (wgpu's own work: validation,
    /// barriers; and whatever the driver does inside its submit).
    pub submit_ns: u64,
    /// Nanoseconds from a read-back's submission returning to its data's arrival: the
    /// device's time for the commands submitted with it (lavapipe runs them on the CPU).
    pub wait_ns: u64,
}

impl WgpuCounters {
    /// Every buffer created, whatever for.
    pub fn buffers_created(&self) -> u64 {
        self.uniform_buffers + self.staging_buffers + self.scratch_buffers
    }
}

impl std::ops::Sub for WgpuCounters {
    type Output = WgpuCounters;
    fn sub(self, o: Self) -> Self {
        WgpuCounters {
            submits: self.submits.saturating_sub(o.submits),
            dispatches: self.dispatches.saturating_sub(o.dispatches),
            bind_groups: self.bind_groups.saturating_sub(o.bind_groups),
            pipelines: self.pipelines.saturating_sub(o.pipelines),
            uniform_buffers: self.uniform_buffers.saturating_sub(o.uniform_buffers),
            staging_buffers: self.staging_buffers.saturating_sub(o.staging_buffers),
            scratch_buffers: self.scratch_buffers.saturating_sub(o.scratch_buffers),
            buffer_writes: self.buffer_writes.saturating_sub(o.buffer_writes),
            read_backs: self.read_backs.saturating_sub(o.read_backs),
            submit_ns: self.submit_ns.saturating_sub(o.submit_ns),
            wait_ns: self.wait_ns.saturating_sub(o.wait_ns),
        }
    }
}

/// Which counter to bump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    Submit,
    Dispatch,
    BindGroup,
    Pipeline,
    UniformBuffer,
    StagingBuffer,
    ScratchBuffer,
    BufferWrite,
    ReadBack,
    SubmitNs,
    WaitNs,
}

/// The live counters (atomic: [`crate::Kernels`] is shared across threads in tests).
#[derive(Debug, Default)]
pub struct Counters {
    cells: [AtomicU64; 11],
}

impl Counters {
    pub fn add(&self, counter: Counter, n: u64) {
        self.cells[counter as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> WgpuCounters {
        let c = |k: Counter| self.cells[k as usize].load(Ordering::Relaxed);
        WgpuCounters {
            submits: c(Counter::Submit),
            dispatches: c(Counter::Dispatch),
            bind_groups: c(Counter::BindGroup),
            pipelines: c(Counter::Pipeline),
            uniform_buffers: c(Counter::UniformBuffer),
            staging_buffers: c(Counter::StagingBuffer),
            scratch_buffers: c(Counter::ScratchBuffer),
            buffer_writes: c(Counter::BufferWrite),
            read_backs: c(Counter::ReadBack),
            submit_ns: c(Counter::SubmitNs),
            wait_ns: c(Counter::WaitNs),
        }
    }
}
