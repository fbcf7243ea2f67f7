//! A recording held against a real card's snapshot of the same step, allocation by
//! allocation: the bytes of every allocation the card made, in the card's order, against the
//! recording's, apart from what neither is meant to hold the same (the cuBLAS workspaces,
//! which the replay adds; the allocations CUDA keeps on the host) and what the recording lists
//! as approximate (a kernel's scratch, by the card's frames).

use gpumem::snapshot::{Recorded, Snapshot, TraceEntry};
use std::collections::BTreeMap;

/// What the comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Against {
    /// The card's allocations, cuBLAS workspaces aside.
    pub card: Vec<i64>,
    /// The recording's, those CUDA keeps on the host aside.
    pub recorded: Vec<i64>,
    /// The card's allocations the recording lists as approximate: bytes each.
    pub approximate: Vec<i64>,
    /// Bytes → count the card has beyond the recording (approximate ones aside).
    pub only_card: BTreeMap<i64, i64>,
    /// Bytes → count the recording has beyond the card.
    pub only_recorded: BTreeMap<i64, i64>,
}

impl Against {
    /// Every allocation of the card's, in the card's order, is the recording's.
    pub fn same_order(&self) -> bool {
        self.card == self.recorded
    }
}

/// The frames' names, joined: what the card's C++ stack says made an allocation.
fn stack(e: &TraceEntry) -> String {
    e.frames
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn is_workspace(stack: &str) -> bool {
    stack.contains("getCurrentCUDABlasHandle") || stack.contains("getCUDABlasLtWorkspace")
}

/// Bytes → count in `a` beyond `b`.
fn beyond(a: &[i64], b: &[i64]) -> BTreeMap<i64, i64> {
    let mut m = BTreeMap::new();
    for x in a {
        *m.entry(*x).or_insert(0) += 1;
    }
    for x in b {
        *m.entry(*x).or_insert(0) -= 1;
    }
    m.retain(|_, n| *n > 0);
    m
}

/// `recording` (with its `recorder` entry `r`) against the card's own `card` snapshot.
pub fn against(recording: &Snapshot, r: &Recorded, card: &Snapshot) -> Against {
    let theirs: Vec<(i64, String)> = card
        .device_traces
        .first()
        .into_iter()
        .flatten()
        .filter(|e| e.action == "alloc")
        .map(|e| (e.size, stack(e)))
        .filter(|(_, s)| !is_workspace(s))
        .collect();
    let ours: Vec<i64> = recording
        .device_traces
        .first()
        .into_iter()
        .flatten()
        .filter(|e| e.action == "alloc")
        .enumerate()
        .filter(|(i, _)| !r.cuda_host.contains(i))
        .map(|(_, e)| e.size)
        .collect();
    // What the card made beyond the recording, in a kernel the recording lists as approximate.
    let sizes: Vec<i64> = theirs.iter().map(|(b, _)| *b).collect();
    let mut excess = beyond(&sizes, &ours);
    let (mut approximate, mut rest) = (Vec::new(), Vec::new());
    for (b, s) in &theirs {
        let left = excess.get(b).copied().unwrap_or(0);
        if left > 0 && r.approximate.iter().any(|a| s.contains(&a.kernel)) {
            excess.insert(*b, left - 1);
            approximate.push(*b);
        } else {
            rest.push(*b);
        }
    }
    Against {
        only_card: beyond(&rest, &ours),
        only_recorded: beyond(&ours, &rest),
        card: rest,
        recorded: ours,
        approximate,
    }
}
