//! What PyTorch's viewer shows beside the timeline, for a static report: the state at the
//! peak (which tensors held the memory then, largest first, with their stacks) and the
//! allocator-state history's segment view (each segment and the blocks in use in it, at the
//! dump or replayed back to any trace entry).

use gpumem::snapshot::{Frame, Snapshot, Timeline, frames_name};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The tensors alive where the requested bytes peak.
#[derive(Debug, Clone, Serialize)]
pub struct PeakState {
    /// The peak is the state after this many trace entries.
    pub after_entries: usize,
    pub requested: u64,
    /// Tensors alive then.
    pub tensors: usize,
    /// The largest of them, largest first.
    pub largest: Vec<PeakTensor>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PeakTensor {
    pub name: String,
    pub bytes: u64,
    pub addr: u64,
    /// The trace entry that allocated it (`None`: the first entry, or before the trace).
    pub allocated_at: Option<usize>,
    pub frames: Vec<Frame>,
}

/// The state at the peak of `t` within `window`, `largest` tensors listed.
pub fn peak_state(t: &Timeline, window: (usize, usize), largest: usize) -> PeakState {
    let (k, requested) = t.peak(window);
    let mut alive: Vec<(usize, &gpumem::snapshot::Band)> = t.alive_at(k).collect();
    let tensors = alive.len();
    alive.sort_unstable_by_key(|(i, b)| (std::cmp::Reverse(b.bytes), *i));
    PeakState {
        after_entries: k,
        requested,
        tensors,
        largest: alive
            .iter()
            .take(largest)
            .map(|(_, b)| PeakTensor {
                name: b.name.clone(),
                bytes: b.bytes,
                addr: b.addr,
                allocated_at: (b.start > 0).then_some(b.start),
                frames: b.frames.to_vec(),
            })
            .collect(),
    }
}

/// One segment as the segment view shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentView {
    pub address: u64,
    pub total_size: u64,
    /// Bytes in blocks in use.
    pub in_use: u64,
    /// The largest stretch not in use: the largest request it could serve.
    pub largest_free: u64,
    /// Blocks in use: address, bytes, name.
    pub blocks: Vec<(u64, u64, String)>,
}

/// Segments of `device` and their blocks in use, after the first `at` trace entries
/// (`None`: at the dump), largest segment first. The dump's segments are replayed back
/// through the trace, newest entry first, as PyTorch's "Allocator State History" does: an
/// `alloc` undone frees its block, a free undone takes it again, a segment's allocation
/// undone removes it and its release undone brings it back, empty.
pub fn segments_at(snap: &Snapshot, device: i64, at: Option<usize>) -> Vec<SegmentView> {
    let mut segs: BTreeMap<u64, u64> = BTreeMap::new();
    let mut used: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    for s in snap.segments.iter().filter(|s| s.device == device) {
        segs.insert(u(s.address), u(s.total_size));
        let mut addr = u(s.address);
        for b in &s.blocks {
            addr = b.address.map_or(addr, u);
            if b.is_active() {
                let name = frames_name(&b.frames).unwrap_or("(unnamed)").to_string();
                used.insert(addr, (u(b.size), name));
            }
            addr += u(b.size);
        }
    }
    let trace = snap.trace(device);
    let from = at.unwrap_or(trace.len()).min(trace.len());
    // Sizes of blocks freed in the newest entries come from their `alloc`, found on the way.
    let mut freed: HashMap<u64, (u64, String)> = HashMap::new();
    for e in trace[from..].iter().rev() {
        let addr = e.addr.map_or(0, u);
        match e.action.as_str() {
            "alloc" => {
                used.remove(&addr);
            }
            "free_completed" | "free" => {
                let name = frames_name(&e.frames).unwrap_or("(unnamed)").to_string();
                freed.insert(addr, (u(e.size), name.clone()));
                used.insert(addr, (u(e.size), name));
            }
            "segment_alloc" | "segment_map" => {
                segs.remove(&addr);
            }
            "segment_free" | "segment_unmap" => {
                segs.insert(addr, u(e.size));
            }
            _ => {}
        }
    }
    let mut out: Vec<SegmentView> = segs
        .iter()
        .map(|(&address, &total_size)| {
            let blocks: Vec<(u64, u64, String)> = used
                .range(address..address.saturating_add(total_size))
                .map(|(&a, (s, n))| (a, *s, n.clone()))
                .collect();
            let mut largest_free = 0;
            let mut at = address;
            for (a, s, _) in &blocks {
                largest_free = largest_free.max(a.saturating_sub(at));
                at = at.max(a + s);
            }
            largest_free = largest_free.max((address + total_size).saturating_sub(at));
            SegmentView {
                address,
                total_size,
                in_use: blocks.iter().map(|b| b.1).sum(),
                largest_free,
                blocks,
            }
        })
        .collect();
    out.sort_by_key(|s| (std::cmp::Reverse(s.total_size), s.address));
    out
}

/// A segment as a bar of `width` characters: `#` where a block is in use, `.` where not.
pub fn bar(s: &SegmentView, width: usize) -> String {
    let mut cells = vec!['.'; width];
    let scale =
        |a: u64| ((a - s.address) as f64 / s.total_size.max(1) as f64 * width as f64) as usize;
    for (a, size, _) in &s.blocks {
        let (x0, x1) = (scale(*a), scale(a + size).max(scale(*a) + 1));
        for c in cells.iter_mut().take(x1.min(width)).skip(x0) {
            *c = '#';
        }
    }
    cells.into_iter().collect()
}
