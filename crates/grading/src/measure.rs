//! What the graders ask the engine: planned steps on fresh devices, read through the
//! allocator's statistics and its trace of events.

use gpumem::alloc::{EventKind, Trace, TraceEvent};
use gpumem::lesson::{UNLIMITED_BYTES, planning_device};
use gpumem::measure::{StepMemory, deepest_network, measure_step};
use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;

/// Planning is deterministic, and a grade (or the proofs' search over one-edit answers)
/// plans the same setups again and again: each plan is made once per process.
fn memo<T: Clone + Send + 'static>(key: String, plan: impl FnOnce() -> T) -> T {
    type Known = Option<HashMap<String, Box<dyn Any + Send>>>;
    static KNOWN: Mutex<Known> = Mutex::new(None);
    let known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = known
        .as_ref()
        .and_then(|k| k.get(&key)?.downcast_ref::<T>())
    {
        return v.clone();
    }
    drop(known);
    let v = plan();
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    known
        .get_or_insert_default()
        .insert(key, Box::new(v.clone()));
    v
}
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::{Device, Role};

/// A planned measurement of `config` at `batch` rows on a card of `capacity` bytes: the
/// engine's two steps (the second is the steady state, with the optimizer's state).
pub fn step(config: &MlpConfig, batch: u64, capacity: u64) -> StepMemory {
    memo(format!("step {config:?} {batch} {capacity}"), || {
        measure_step(&planning_device(capacity), config, batch, 0)
            .expect("graders only plan valid setups")
    })
}

/// The most hidden layers (up to `max`) of `config`'s width whose step at `batch` rows the
/// engine fits on a card of `capacity` bytes; `None` when not even one does or the search
/// fails.
pub fn deepest(config: &MlpConfig, batch: u64, capacity: u64, max: u64) -> Option<u64> {
    memo(
        format!("deepest {config:?} {batch} {capacity} {max}"),
        || {
            deepest_network(&planning_device(capacity), config, batch, max)
                .ok()
                .map(|s| s.best.unwrap_or(0))
        },
    )
}

/// A planned measurement on an unlimited card: what the setup needs.
pub fn needs(config: &MlpConfig, batch: u64) -> StepMemory {
    step(config, batch, UNLIMITED_BYTES)
}

/// The allocator's events for building `config` and running its first step at `batch`
/// rows: each of the step's tensors is allocated once (gradients in the backward pass, the
/// optimizer's state in the update).
pub fn trace(config: &MlpConfig, batch: u64) -> Trace {
    memo(format!("trace {config:?} {batch}"), || {
        fresh_trace(config, batch)
    })
}

fn fresh_trace(config: &MlpConfig, batch: u64) -> Trace {
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
