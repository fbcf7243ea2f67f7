//! The device limits kernels plan with.

/// The limits kernels plan with. [`crate::Kernels::new`] reads them from the device;
/// [`crate::Kernels::with_limits`] lets tests force tighter ones (e.g. 4 KiB bindings) so
/// that pieces, straddling rows and grid-stride loops run on small data.
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
    /// Plan as for a CPU adapter (lavapipe), where every workgroup and split costs µs of
    /// its own: flat kernels in a few workgroups that loop, split-k aiming for one
    /// workgroup's worth. [`KernelLimits::of`] sets it from the adapter's type; false runs
    /// a GPU's plans anywhere (the tests do, on lavapipe).
    pub cpu_plans: bool,
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
            cpu_plans: device.adapter_info().device_type == wgpu::DeviceType::Cpu,
        }
    }

    /// These limits made no looser than the device's.
    pub(crate) fn within(self, device: &wgpu::Device) -> Self {
        let d = Self::of(device);
        KernelLimits {
            // Whole 32-byte blocks, so bindings rounded up to whole quads stay within it.
            max_binding: self.max_binding.clamp(32, d.max_binding) & !31,
            offset_align: self.offset_align.max(d.offset_align).next_power_of_two(),
            max_workgroups: self.max_workgroups.clamp(1, d.max_workgroups),
            subgroups: self.subgroups,
            shader_f16: self.shader_f16,
            cpu_plans: self.cpu_plans,
        }
    }
}
