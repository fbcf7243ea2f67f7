//! Helpers for tests that need a wgpu device, behind the `testing` feature: they skip (with
//! a notice) where there is no adapter, unless `GPUMEM_REQUIRE_ADAPTER=1` — which CI sets,
//! so GPU tests cannot pass by skipping there.

use crate::device::{BufferStore, Device, DeviceOptions};
use crate::exec::executor::Executor;
use crate::exec::gpu::SharedKernels;
use crate::size::MemorySpec;
use gpumem_kernels::KernelLimits;
use std::rc::Rc;

pub use gpumem_kernels::testing::adapter_required;

/// One GPU for a test, whose devices share compiled kernels (compiling them takes seconds
/// on lavapipe).
#[derive(Debug)]
pub struct TestGpu {
    store: BufferStore,
    kernels: SharedKernels,
}

/// The GPU for a test, or `None` where there is none (see the module docs).
pub fn gpu() -> Option<TestGpu> {
    gpumem_kernels::testing::gpu().map(|g| TestGpu {
        store: BufferStore::new(Rc::new(g)),
        kernels: SharedKernels::default(),
    })
}

impl TestGpu {
    /// A fresh wgpu device of `memory`.
    pub fn device(&self, memory: MemorySpec) -> Device {
        self.device_with(&options(memory))
    }

    /// The underlying GPU.
    pub fn gpu(&self) -> &Rc<gpumem_kernels::Gpu> {
        self.store.gpu()
    }

    /// A fresh wgpu device opened with `options` (its backend is ignored).
    pub fn device_with(&self, options: &DeviceOptions) -> Device {
        on(self.store.fresh(), self.kernels.clone(), options)
            .expect("the test's allocator settings are valid")
    }

    /// A device whose buffers are at most `max_buffer` bytes and whose kernels bind at most
    /// `max_binding` bytes at a time: small tensors then span several buffers and are
    /// processed in pieces, as full-size tensors are on real cards.
    pub fn tight_device(&self, memory: MemorySpec, max_buffer: u64, max_binding: u64) -> Device {
        let gpu = Rc::clone(self.store.gpu());
        let limits = KernelLimits {
            max_binding,
            ..KernelLimits::of(&gpu.device)
        };
        let kernels =
            SharedKernels::with_limits(&gpu, limits).expect("kernels build on a test device");
        on(
            BufferStore::with_max_buffer(gpu, max_buffer),
            kernels,
            &options(memory),
        )
        .expect("default allocator settings are valid")
    }
}

/// A wgpu device of `memory` on a new GPU, or `None` where there is none.
pub fn wgpu_device(memory: MemorySpec) -> Option<Device> {
    gpu().map(|g| g.device(memory))
}

fn options(memory: MemorySpec) -> DeviceOptions {
    DeviceOptions {
        memory,
        ..Default::default()
    }
}

/// A device over `store` whose executor runs `kernels`.
fn on(
    mut store: BufferStore,
    kernels: SharedKernels,
    options: &DeviceOptions,
) -> Result<Device, crate::Error> {
    let exec = Executor::on_gpu(&mut store, kernels);
    Device::with_executor(
        store.into(),
        exec,
        "test adapter".into(),
        "test".into(),
        options,
    )
}
