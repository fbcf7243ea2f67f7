//! What a `wgpu` device's kernels did: work counted, device time, bind groups cached. The
//! executor keeps the figures; on the other backings there are none.

use super::Device;
use crate::exec::gpu::GpuExecutor;
use gpumem_kernels::{KernelShare, KernelTime, WgpuCounters};

impl Device {
    /// Runs `f` with the wgpu executor (`None` on the other backings).
    fn with_wgpu<R>(&self, f: impl FnOnce(&GpuExecutor) -> R) -> Option<R> {
        self.borrow().exec.wgpu().map(f)
    }

    /// What the wgpu backing submitted, dispatched and created so far (`None` on the other
    /// backings): subtract two snapshots for one step's work.
    pub fn wgpu_counters(&self) -> Option<WgpuCounters> {
        self.with_wgpu(GpuExecutor::counters)
    }

    /// Times the wgpu backing's kernels with timestamp queries from now on (each submission
    /// then waits for the device); false where the adapter has none or the backing is not
    /// wgpu. For benches.
    pub fn time_kernels(&self) -> bool {
        self.with_wgpu(GpuExecutor::time_kernels).unwrap_or(false)
    }

    /// Device time inside the timed kernels so far (see [`Device::time_kernels`]).
    pub fn kernel_time(&self) -> Option<KernelTime> {
        self.with_wgpu(GpuExecutor::kernel_time).flatten()
    }

    /// [`Device::time_kernels`] with every dispatch in a timed pass of its own, summed by
    /// kernel ([`Device::kernel_profile`]): which kernels cost most (a pass each costs more
    /// than the step's shared pass). For benches.
    pub fn profile_kernels(&self) -> bool {
        self.with_wgpu(GpuExecutor::profile_kernels)
            .unwrap_or(false)
    }

    /// Device time per kernel while profiling (empty when not profiling).
    pub fn kernel_profile(&self) -> Vec<KernelShare> {
        self.with_wgpu(GpuExecutor::kernel_profile)
            .unwrap_or_default()
    }

    /// Bind groups the wgpu backing holds now (`None` on the other backings).
    pub fn wgpu_cached_bind_groups(&self) -> Option<usize> {
        self.with_wgpu(GpuExecutor::cached_bind_groups)
    }
}
