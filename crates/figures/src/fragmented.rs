//! A step that runs out of memory although the cache holds enough free bytes: which pass
//! failed, on which tensor, and what cut the cached block it would have needed — read from
//! the allocator's own trace and snapshot at the failure, on the lesson's card.

use crate::data::SEED;
use anyhow::Result;
use gpumem::Device;
use gpumem::Error;
use gpumem::alloc::{EventKind, OutOfMemory};
use gpumem::estimate::block_bytes;
use gpumem::lesson::{Card, planning_on};
use gpumem::measure::STEPS;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Pass};
use std::collections::BTreeMap;

/// A fragmented failure, as the allocator saw it.
#[derive(Debug, Clone)]
pub struct Fragmented {
    /// The step (1 or 2) and the pass that ran out.
    pub step: u32,
    pub pass: Pass,
    pub oom: OutOfMemory,
    /// The cached segment big enough for the request, had it been whole: its size, the
    /// tensor it was first made for, and the tensors alive inside it at the failure.
    pub segment: u64,
    pub made_for: String,
    pub cut_by: Vec<Cutter>,
}

/// A tensor alive inside the cut segment when the request failed.
#[derive(Debug, Clone)]
pub struct Cutter {
    pub label: String,
    pub bytes: u64,
    /// The step (1 or 2) that made it.
    pub made_in_step: u32,
    /// Whether another tensor of the same name (the previous step's) was alive when it was
    /// made.
    pub twin_alive: bool,
}

/// Runs `config` at `rows` on the ideal card for [`STEPS`] steps; `None` if it fits, or
/// if it fails without a cut segment (the card is simply too small).
pub fn fragmented_step(config: &MlpConfig, rows: u64) -> Result<Option<Fragmented>> {
    fragmented_step_on(Card::Ideal, config, rows, true)
}

/// [`fragmented_step`] on `card`; unless `only_by_message`, a failure counts when a cached
/// segment big enough for the request was cut, even if the cache's unused bytes are fewer
/// than the request (the message's test for fragmentation).
pub fn fragmented_step_on(
    card: Card,
    config: &MlpConfig,
    rows: u64,
    only_by_message: bool,
) -> Result<Option<Fragmented>> {
    let device = Device::new(&planning_on(card))?;
    let mut mlp = Mlp::new(&device, &card.config(config), SEED)?;
    let mut steps = Vec::new();
    for step in 1..=STEPS {
        device.start_trace();
        let result = mlp.train_step(Batch::Planned(rows));
        steps.push(device.take_trace());
        let oom = match result {
            Ok(_) => continue,
            Err(Error::OutOfMemory(oom)) => *oom,
            Err(e) => return Err(e.into()),
        };
        if only_by_message && !oom.is_fragmentation() {
            return Ok(None);
        }
        let made_for: BTreeMap<u64, String> = steps
            .iter()
            .flat_map(|t| &t.events)
            .filter(|e| e.kind == EventKind::SegmentAlloc)
            .map(|e| (e.addr, e.label.clone()))
            .collect();
        let blocks = device.snapshot();
        let needed = block_bytes(oom.requested);
        // Segments by their first block's address (the address the device gave them).
        let mut segments: BTreeMap<u64, Vec<&gpumem::alloc::BlockInfo>> = BTreeMap::new();
        for b in &blocks {
            segments.entry(b.segment).or_default().push(b);
        }
        let cut = segments.values().find(|s| {
            let size: u64 = s.iter().map(|b| b.size).sum();
            size >= needed && s.iter().any(|b| b.allocated) && s.iter().any(|b| !b.allocated)
        });
        let Some(cut) = cut else { return Ok(None) };
        let start = cut.iter().map(|b| b.addr).min().unwrap_or(0);
        return Ok(Some(Fragmented {
            step,
            pass: mlp.pass(),
            oom,
            segment: cut.iter().map(|b| b.size).sum(),
            made_for: made_for.get(&start).cloned().unwrap_or_default(),
            cut_by: cut
                .iter()
                .filter(|b| b.allocated)
                .map(|b| cutter(&steps, b))
                .collect(),
        }));
    }
    Ok(None)
}

/// When `block` was made and whether a namesake was alive then, from the steps' traces
/// (its last allocation at that address under that name).
fn cutter(steps: &[gpumem::alloc::Trace], block: &gpumem::alloc::BlockInfo) -> Cutter {
    let mut alive: BTreeMap<u64, &str> = BTreeMap::new();
    let mut found = (0, false);
    for (i, trace) in steps.iter().enumerate() {
        for e in &trace.events {
            match e.kind {
                EventKind::Alloc => {
                    if e.addr == block.addr && e.label == block.label {
                        found = (i as u32 + 1, alive.values().any(|l| *l == block.label));
                    }
                    alive.insert(e.addr, &e.label);
                }
                EventKind::Free => {
                    alive.remove(&e.addr);
                }
                _ => {}
            }
        }
    }
    Cutter {
        label: block.label.clone(),
        bytes: block.size,
        made_in_step: found.0,
        twin_alive: found.1,
    }
}
