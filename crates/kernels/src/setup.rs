//! Making [`Kernels`] for a device. Creation builds matmul's float32 tiled pipelines to
//! choose its variant, so it lives here, above the kernel modules, rather than in
//! `kernels.rs`, which every kernel module builds on.

use crate::error::KernelError;
use crate::kernels::{Kernels, Shared};
use crate::limits::KernelLimits;
use crate::matmul;

impl Kernels {
    /// Kernels for `device`, planning with the device's limits. Builds the float32 tiled
    /// matmul (to learn whether its subgroup variant works); every other pipeline is built
    /// at its first use.
    pub fn new(device: &wgpu::Device) -> Result<Self, KernelError> {
        Self::with_limits(device, KernelLimits::of(device))
    }

    /// Like [`Kernels::new`] but plans with `limits` (clamped to the device's).
    pub fn with_limits(device: &wgpu::Device, limits: KernelLimits) -> Result<Self, KernelError> {
        Self::build(device, limits, Shared::new(device))
    }

    /// Kernels for the same device that plan with `limits`, sharing these pipelines (so
    /// nothing is compiled twice).
    pub fn reuse_with_limits(&self, limits: KernelLimits) -> Result<Self, KernelError> {
        Self::build(&self.device, limits, Shared::of(self))
    }

    fn build(
        device: &wgpu::Device,
        limits: KernelLimits,
        shared: Shared,
    ) -> Result<Self, KernelError> {
        let limits = limits.within(device);
        let wg = matmul::workgroup_width(device);
        let split_target = matmul::split_target(limits.cpu_plans);
        let mut k = Kernels::assemble(device, limits, shared, wg, split_target);
        k.subgroups = matmul::init(&k, matmul::wants_subgroups(device, &limits))?;
        Ok(k)
    }
}
