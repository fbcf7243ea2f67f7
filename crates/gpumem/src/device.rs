//! The device: one memory system (the caching allocator) over one of three backings.
//!
//! - `wgpu`: segments are wgpu buffers and kernels are WGSL compute shaders, on any adapter
//!   (a real GPU, or lavapipe where there is none);
//! - `cpu`: segments are host memory and kernels are plain Rust — the numerical reference;
//! - `plan`: segments have no backing and no kernel runs: the same allocations as a real
//!   step, in microseconds, for cards no machine here has.
//!
//! Whatever the backing, the device has a capacity: by default an emulated card that
//! reports 15.90 GiB like the lesson's, or `native` for whatever the backing can get.

mod history;
#[cfg(feature = "wgpu")]
mod kernels;
mod workspaces;

pub use crate::backend::Backend;
#[cfg(feature = "wgpu")]
pub use crate::segments::BufferStore;
pub use crate::segments::{Backing, DriverMemory, HostStore};

pub use crate::error::Error;

use crate::alloc::{
    AllocError, Allocator, AllocatorConfig, MemoryStats, OomMessage, SegmentStore, Trace,
};
use crate::exec::executor::Executor;
use crate::exec::op::{Op, Operand};
use crate::size::MemorySpec;
use std::cell::{Ref, RefCell};
use std::fmt;
use std::rc::Rc;

/// How to open a device.
#[derive(Debug, Clone, Default)]
pub struct DeviceOptions {
    pub backend: Backend,
    pub memory: MemorySpec,
    /// The allocator's settings, memory outside the allocator among them; the capacity comes
    /// from `memory`.
    pub allocator: AllocatorConfig,
    /// Which of PyTorch's sentences out-of-memory errors use.
    pub oom_message: OomMessage,
    /// Record the allocator's history from the moment the device opens, keeping the newest
    /// this many events (`_record_memory_history(max_entries=…)`), for a snapshot.
    pub record_history: Option<usize>,
    /// The workspaces matrix products take through the allocator (none: a tensors-only
    /// card).
    pub cublas: crate::cublas::WorkspaceRules,
    /// Which `max_split_size` PyTorch accepts (`versions::max_split_minimum` of the version
    /// followed; the newest's by default).
    pub max_split_rule: crate::alloc::MaxSplitMinimum,
}

/// What was opened, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    pub backend: Backend,
    /// The adapter's name on wgpu, else the backing's.
    pub name: String,
    /// Why this backing (`auto` explains its choice).
    pub reason: String,
    /// Whether kernels run (false on `plan`).
    pub executes: bool,
    pub memory: MemorySpec,
}

impl DeviceInfo {
    /// How out-of-memory messages name device `index` (PyTorch's `GPU 0`).
    fn oom_name(&self, index: usize) -> String {
        match self.backend {
            Backend::Wgpu => format!("wgpu device {index}: {}", self.name),
            b => format!("{b} device {index}"),
        }
    }
}

pub(crate) struct Inner {
    pub alloc: Allocator<Backing>,
    pub info: DeviceInfo,
    pub oom_message: OomMessage,
    /// The snapshot at the first out-of-memory while the history was recorded.
    pub oom_snapshot: Option<crate::snapshot::Snapshot>,
    /// The card's number in a group of devices (0 alone), as messages name it.
    pub index: usize,
    /// The matrix products' library workspaces (none unless set).
    pub workspaces: workspaces::Workspaces,
    /// What runs the operations: beside the allocator, which only places their bytes.
    pub exec: Executor,
}

/// A device: a backing, an allocator over it, and a capacity. Cheap to clone (shared).
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Rc<RefCell<Inner>>,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("info", &self.info())
            .finish()
    }
}

impl Device {
    /// Opens a device as the options say. `Auto` picks a hardware GPU through wgpu when
    /// there is one and the `cpu` backing otherwise, and says so in [`DeviceInfo::reason`].
    /// A backing this build left out (features `wgpu`, `cpu`) is an [`Error::NotBuilt`].
    pub fn new(options: &DeviceOptions) -> Result<Device, Error> {
        let (backing, name, reason) = crate::segments::open(options.backend)?;
        Self::with_backing(backing, name, reason, options)
    }

    /// A device on an already-opened backing.
    pub fn with_backing(
        mut backing: Backing,
        name: String,
        reason: String,
        options: &DeviceOptions,
    ) -> Result<Device, Error> {
        let exec = Executor::for_backing(&mut backing);
        Self::with_executor(backing, exec, name, reason, options)
    }

    /// A device on an already-opened backing and the executor made for it.
    pub(crate) fn with_executor(
        backing: Backing,
        exec: Executor,
        name: String,
        reason: String,
        options: &DeviceOptions,
    ) -> Result<Device, Error> {
        let capacity = match options.memory {
            MemorySpec::Bytes(b) => Some(b),
            MemorySpec::Native => None,
        };
        if capacity.is_none() && !backing.holds_data() {
            return Err(Error::PlanNeedsCapacity);
        }
        let config = AllocatorConfig {
            capacity,
            ..options.allocator.clone()
        };
        let info = DeviceInfo {
            backend: backing.kind(),
            name,
            reason,
            executes: exec.executes(),
            memory: options.memory,
        };
        config.validate_with(options.max_split_rule)?;
        let mut alloc = Allocator::new(backing, config)?;
        if let Some(n) = options.record_history {
            alloc.record_memory_history(true, n);
        }
        Ok(Device {
            inner: Rc::new(RefCell::new(Inner {
                alloc,
                info,
                oom_message: options.oom_message,
                oom_snapshot: None,
                index: 0,
                workspaces: workspaces::Workspaces::new(options.cublas),
                exec,
            })),
        })
    }

    /// A `plan` device of `capacity` bytes with default allocator settings.
    pub fn plan(capacity: u64) -> Device {
        Self::quick(Backend::Plan, capacity)
    }

    /// A `cpu` device of `capacity` bytes with default allocator settings.
    #[cfg(feature = "cpu")]
    pub fn cpu(capacity: u64) -> Device {
        Self::quick(Backend::Cpu, capacity)
    }

    fn quick(backend: Backend, capacity: u64) -> Device {
        let options = DeviceOptions {
            backend,
            memory: MemorySpec::Bytes(capacity.max(1)),
            ..Default::default()
        };
        Self::new(&options).expect("plan and cpu devices with default settings always open")
    }

    /// Numbers this device as card `index` of a group (its out-of-memory message names it).
    pub(crate) fn set_index(&self, index: usize) {
        self.inner.borrow_mut().index = index;
    }

    pub fn info(&self) -> DeviceInfo {
        self.inner.borrow().info.clone()
    }

    pub(crate) fn borrow(&self) -> Ref<'_, Inner> {
        self.inner.borrow()
    }

    /// Allocates `bytes` for `role`, labelled `label`: the raw form of what tensors do.
    pub(crate) fn malloc(
        &self,
        bytes: u64,
        role: crate::Role,
        label: &str,
    ) -> Result<crate::alloc::BlockAddr, Error> {
        let mut inner = self.inner.borrow_mut();
        let (name, message) = (inner.info.oom_name(inner.index), inner.oom_message);
        let result = inner.alloc.malloc_as(bytes, role, label);
        inner.note_oom(&result);
        result.map_err(|e| match e {
            AllocError::OutOfMemory(mut o) => {
                o.device = name;
                o.message = message;
                Error::OutOfMemory(o)
            }
            AllocError::TooLarge(n) => Error::Setup(format!(
                "{label}: a request of {n} bytes is larger than any device can hold"
            )),
            AllocError::Device(why) => Error::Device(why),
        })
    }

    pub(crate) fn free(&self, block: crate::alloc::BlockAddr) {
        let mut inner = self.inner.borrow_mut();
        let Inner { alloc, exec, .. } = &mut *inner;
        // An operation the executor holds back runs before its memory can change hands.
        exec.before_free(alloc, block);
        // A failed free means the handle was already freed: a bug, but not one worth
        // crashing a training run over; the allocator's table stays consistent.
        let _ = alloc.free(block);
    }

    /// Hands the operation `op` makes to the executor (not made on `plan`, which runs
    /// nothing).
    pub(crate) fn execute(&self, op: impl FnOnce() -> Op) -> Result<(), Error> {
        let mut inner = self.inner.borrow_mut();
        let Inner { alloc, exec, .. } = &mut *inner;
        if !exec.executes() {
            return Ok(());
        }
        exec.submit(alloc, op())
    }

    /// Copies `data` from the host into `t`'s bytes, through the executor.
    pub(crate) fn write<T: bytemuck::Pod>(&self, t: &Operand, data: &[T]) -> Result<(), Error> {
        let mut inner = self.inner.borrow_mut();
        let Inner { alloc, exec, .. } = &mut *inner;
        exec.write(alloc, t, data)
    }

    /// Copies `t`'s values to the host, through the executor.
    pub(crate) fn read<T: bytemuck::Pod>(&self, t: &Operand) -> Result<Vec<T>, Error> {
        let mut inner = self.inner.borrow_mut();
        let Inner { alloc, exec, .. } = &mut *inner;
        exec.read(alloc, t)
    }

    /// `torch.cuda.memory_allocated()`.
    pub fn memory_allocated(&self) -> u64 {
        self.inner.borrow().alloc.allocated()
    }

    /// `torch.cuda.memory_reserved()`.
    pub fn memory_reserved(&self) -> u64 {
        self.inner.borrow().alloc.reserved()
    }

    /// `torch.cuda.max_memory_allocated()`.
    pub fn max_memory_allocated(&self) -> u64 {
        self.inner.borrow().alloc.stats().allocated_bytes.all.peak
    }

    /// `torch.cuda.max_memory_reserved()`.
    pub fn max_memory_reserved(&self) -> u64 {
        self.inner.borrow().alloc.stats().reserved_bytes.all.peak
    }

    /// `torch.cuda.memory_stats()`.
    pub fn memory_stats(&self) -> MemoryStats {
        self.inner.borrow().alloc.stats().clone()
    }

    /// `torch.cuda.reset_peak_memory_stats()`.
    pub fn reset_peak_memory_stats(&self) {
        self.inner.borrow_mut().alloc.reset_peaks();
    }

    /// `torch.cuda.empty_cache()`: gives unused cached segments back to the device.
    pub fn empty_cache(&self) {
        self.inner.borrow_mut().alloc.empty_cache();
    }

    /// The capacity, if the device has one (an emulated card or a known host size).
    pub fn capacity(&self) -> Option<u64> {
        let inner = self.inner.borrow();
        inner
            .alloc
            .config()
            .capacity
            .or_else(|| inner.alloc.store().total_memory())
    }

    /// Starts recording allocator events.
    pub fn start_trace(&self) {
        self.inner.borrow_mut().alloc.start_trace();
    }

    /// Stops recording and returns the events.
    pub fn take_trace(&self) -> Trace {
        self.inner.borrow_mut().alloc.take_trace()
    }

    /// Every block with its label (`torch.cuda.memory_snapshot()`).
    pub fn snapshot(&self) -> Vec<crate::alloc::BlockInfo> {
        self.inner.borrow().alloc.snapshot()
    }

    /// The driver's own view of buffer memory on `wgpu` (None on other backings, or when
    /// the backend cannot report it).
    pub fn driver_memory(&self) -> Option<DriverMemory> {
        self.inner.borrow().alloc.store().driver_memory()
    }
}

#[cfg(all(test, feature = "wgpu", feature = "cpu"))]
mod tests;
