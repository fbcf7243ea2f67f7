//! What the graders ask the engine: planned steps on fresh devices, read through the
//! allocator's statistics and its trace of events.

use gpumem::alloc::{EventKind, Trace, TraceEvent};
use gpumem::lesson::{UNLIMITED_BYTES, planning_device};
use gpumem::measure::{StepMemory, measure_step};
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::{Device, Role};

/// A planned measurement of `config` at `batch` rows on a card of `capacity` bytes: the
/// engine's two steps (the second is the steady state, with the optimizer's state).
pub fn step(config: &MlpConfig, batch: u64, capacity: u64) -> StepMemory {
    measure_step(&planning_device(capacity), config, batch, 0)
        .expect("graders only plan valid setups")
}

/// A planned measurement on an unlimited card: what the setup needs.
pub fn needs(config: &MlpConfig, batch: u64) -> StepMemory {
    step(config, batch, UNLIMITED_BYTES)
}

/// The allocator's events for building `config` and running its first step at `batch`
/// rows: each of the step's tensors is allocated once (gradients in the backward pass, the
/// optimizer's state in the update).
pub fn trace(config: &MlpConfig, batch: u64) -> Trace {
    let device = Device::plan(UNLIMITED_BYTES);
    device.start_trace();
    let mut mlp = Mlp::new(&device, config, 0).expect("graders only plan valid setups");
    mlp.train_step(Batch::Planned(batch))
        .expect("graders only plan valid setups");
    device.take_trace()
}

/// The allocations of tensors whose role `keep` accepts.
fn allocs(trace: &Trace, keep: impl Fn(Role) -> bool) -> impl Iterator<Item = &TraceEvent> {
    trace
        .events
        .iter()
        .filter(move |e| e.kind == EventKind::Alloc && e.role.is_some_and(&keep))
}

/// Requested bytes of the allocations of tensors whose role `keep` accepts.
pub fn requested(trace: &Trace, keep: impl Fn(Role) -> bool) -> u64 {
    allocs(trace, keep).map(|e| e.requested).sum()
}

/// Block bytes (after the allocator's rounding) of the allocations of tensors whose role
/// `keep` accepts.
pub fn blocks(trace: &Trace, keep: impl Fn(Role) -> bool) -> u64 {
    allocs(trace, keep).map(|e| e.size).sum()
}

/// The engine's optimizer for a learner's choice.
pub fn optimizer(adam: bool) -> Optimizer {
    if adam {
        Optimizer::adam(0.001)
    } else {
        Optimizer::LESSON
    }
}
