//! The executor: what runs a device's operations — plain Rust on `cpu`; on `wgpu` the WGSL
//! kernels with their command encoder, bind-group cache, staging buffer, counters and
//! timing; nothing on `plan`. Operations reach it beside the allocator, not through it: the
//! allocator only says where each tensor's bytes are.
//!
//! On `wgpu` it holds back an operation that may start a fused pair ([`super::fusion`])
//! until the next one arrives. A held operation keeps no tensor alive (its operands are
//! block addresses), so it runs before anything could change what it reads or writes: the
//! next operation, a transfer to or from the host, or the freeing of one of its blocks.

use super::Memory;
use super::fusion::Joined;
#[cfg(feature = "wgpu")]
use super::gpu::{GpuExecutor, SharedKernels};
use super::op::{Op, Operand};
use crate::alloc::BlockAddr;
use crate::error::Error;
use crate::segments::Backing;
#[cfg(feature = "wgpu")]
use crate::segments::BufferStore;

/// What runs the operations of one device.
pub(crate) struct Executor {
    engine: Engine,
    /// The operation held back for a possible fusion with the next.
    pub(super) pending: Option<Op>,
    /// The error of a held operation run while a block was being freed (a drop cannot
    /// return one): the next operation or transfer reports it.
    failed: Option<Error>,
}

enum Engine {
    Plan,
    #[cfg(feature = "cpu")]
    Cpu,
    #[cfg(feature = "wgpu")]
    Wgpu(GpuExecutor),
}

impl Executor {
    /// The executor for a device over `backing` (on `wgpu`, with kernels of its own,
    /// compiled at first use).
    pub fn for_backing(backing: &mut Backing) -> Executor {
        Self::with_engine(match backing {
            Backing::Plan => Engine::Plan,
            #[cfg(feature = "cpu")]
            Backing::Cpu(_) => Engine::Cpu,
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(store) => return Self::on_gpu(store, SharedKernels::default()),
        })
    }

    /// The executor for a device over `store`, with `kernels` shared with other devices on
    /// its GPU.
    #[cfg(feature = "wgpu")]
    pub fn on_gpu(store: &mut BufferStore, kernels: SharedKernels) -> Executor {
        Self::with_engine(Engine::Wgpu(GpuExecutor::new(store, kernels)))
    }

    fn with_engine(engine: Engine) -> Executor {
        Executor {
            engine,
            pending: None,
            failed: None,
        }
    }

    /// Whether operations run (false on `plan`, which only checks them).
    pub fn executes(&self) -> bool {
        !matches!(self.engine, Engine::Plan)
    }

    /// Runs `op`, or holds it back where it may join the next one.
    pub fn submit(&mut self, mem: &Memory, op: Op) -> Result<(), Error> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let op = match self.pending.take() {
            Some(first) => match super::fusion::fuse(first, op) {
                Joined::One(pair) => return self.run(mem, &pair),
                Joined::Apart(first, next) => {
                    self.run(mem, &first)?;
                    next
                }
            },
            None => op,
        };
        if self.fuses() && super::fusion::may_lead(&op) {
            self.pending = Some(op);
            return Ok(());
        }
        self.run(mem, &op)
    }

    /// Runs the operation held back, if any: before data crosses to or from the host.
    pub fn sync(&mut self, mem: &Memory) -> Result<(), Error> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        match self.pending.take() {
            Some(op) => self.run(mem, &op),
            None => Ok(()),
        }
    }

    /// Copies `data` into `t`'s bytes, after the operation held back.
    #[cfg_attr(not(any(feature = "cpu", feature = "wgpu")), allow(unused_variables))]
    pub fn write<T: bytemuck::Pod>(
        &mut self,
        mem: &Memory,
        t: &Operand,
        data: &[T],
    ) -> Result<(), Error> {
        // What is held back reads or writes device memory before the host does.
        self.sync(mem)?;
        match &self.engine {
            Engine::Plan => Ok(()),
            #[cfg(feature = "cpu")]
            Engine::Cpu => super::cpu::write(mem, t, data),
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(gpu) => gpu.write(mem, t, bytemuck::cast_slice(data)),
        }
    }

    /// A copy of `t`'s values, after the operation held back. `plan` holds no data, which
    /// is an error.
    pub fn read<T: bytemuck::Pod>(&mut self, mem: &Memory, t: &Operand) -> Result<Vec<T>, Error> {
        self.sync(mem)?;
        match &self.engine {
            Engine::Plan => Err(Error::Plan(format!(
                "{}: the plan backing holds no data (steps are planned, not executed)",
                t.label
            ))),
            #[cfg(feature = "cpu")]
            Engine::Cpu => super::cpu::read(mem, t),
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(gpu) => gpu.read_back(mem, t),
        }
    }

    /// Before `block` is freed: the held operation runs now if it uses the block.
    pub fn before_free(&mut self, mem: &Memory, block: BlockAddr) {
        if self.pending.as_ref().is_some_and(|op| op.uses(block))
            && let Err(e) = self.sync(mem)
        {
            self.failed = Some(e);
        }
    }

    /// Only `wgpu` has kernels that run two operations as one.
    fn fuses(&self) -> bool {
        #[cfg(feature = "wgpu")]
        if let Engine::Wgpu(_) = self.engine {
            return true;
        }
        false
    }

    #[cfg_attr(not(any(feature = "cpu", feature = "wgpu")), allow(unused_variables))]
    fn run(&self, mem: &Memory, op: &Op) -> Result<(), Error> {
        match &self.engine {
            Engine::Plan => Ok(()),
            #[cfg(feature = "cpu")]
            Engine::Cpu => super::cpu::run(mem, op),
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(gpu) => gpu.run(mem, op),
        }
    }

    /// The `wgpu` executor, if this is one.
    #[cfg(feature = "wgpu")]
    pub fn wgpu(&self) -> Option<&GpuExecutor> {
        match &self.engine {
            Engine::Wgpu(g) => Some(g),
            _ => None,
        }
    }
}
