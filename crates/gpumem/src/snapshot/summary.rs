//! What a snapshot says, computed from the snapshot alone (ours or PyTorch's): the figures
//! at dump time, the peaks over the recorded trace, whether the blocks tile their segments,
//! and each tensor's life as a band for the per-tensor timeline.
//!
//! The trace's totals are rebuilt backwards from the state at dump time: the history is the
//! newest events up to the dump, so walking back from the segments' figures through each
//! event's change gives the figures after every event, even when older events were dropped.

use super::format::{Frames, Snapshot, TraceEntry, frames_name};
use serde::Serialize;

/// One device's figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub device: i64,
    pub segments: usize,
    /// Bytes in segments (`memory_reserved()` at dump time).
    pub reserved: u64,
    /// Bytes in allocated blocks (`memory_allocated()`).
    pub allocated: u64,
    /// Bytes in active blocks: allocated, or freed and waiting on another stream.
    pub active: u64,
    /// Bytes the active blocks' callers asked for.
    pub requested: u64,
    /// Trace entries recorded for this device.
    pub events: usize,
    /// Highest requested bytes in live blocks over the trace (what the trace's sizes count).
    pub peak_requested: u64,
    /// Highest reserved bytes over the trace.
    pub peak_reserved: u64,
    /// Out-of-memory entries: the rounded request and the device's free bytes.
    pub ooms: Vec<(u64, u64)>,
    /// The largest active blocks at dump time, largest first: name, bytes, address.
    pub largest: Vec<(String, u64, u64)>,
}

/// A tensor's life on the per-tensor timeline: from the trace entry that allocated it to
/// the one that freed it (`None`: alive at the dump). Blocks alive before the trace start at
/// 0, as in PyTorch's "Active Memory Timeline".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Band {
    pub name: String,
    pub bytes: u64,
    pub addr: u64,
    pub start: usize,
    pub end: Option<usize>,
    /// Where it was allocated (shared with the trace entry or block that says so).
    #[serde(skip)]
    pub frames: Frames,
}

/// Every band of one device, and the totals after each trace entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    pub bands: Vec<Band>,
    /// Trace entries: the x axis runs from 0 to this.
    pub steps: usize,
    /// Reserved bytes before the first entry and after each (`steps + 1` values).
    pub reserved: Vec<u64>,
    /// Requested bytes in live blocks, likewise.
    pub requested: Vec<u64>,
}

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// How an entry changes reserved and requested bytes.
fn deltas(e: &TraceEntry) -> (i128, i128) {
    let s = i128::from(e.size);
    match e.action.as_str() {
        "segment_alloc" | "segment_map" => (s, 0),
        "segment_free" | "segment_unmap" => (-s, 0),
        "alloc" => (0, s),
        // `free` is the viewer's name for a free_requested/free_completed pair.
        "free_completed" | "free" => (0, -s),
        _ => (0, 0),
    }
}

/// The values before the first entry and after each, walking back from `end`.
fn backwards(entries: &[TraceEntry], end: u64, pick: fn((i128, i128)) -> i128) -> Vec<u64> {
    let mut out = vec![0u64; entries.len() + 1];
    let mut v = i128::from(end);
    out[entries.len()] = end;
    for (i, e) in entries.iter().enumerate().rev() {
        v -= pick(deltas(e));
        out[i] = u64::try_from(v.max(0)).unwrap_or(u64::MAX);
    }
    out
}

impl Timeline {
    /// The highest requested bytes in live tensors over entries `from..=to` of the x axis
    /// (a value of [`Timeline::requested`]; the first where several are equal), and where.
    pub fn peak(&self, (from, to): (usize, usize)) -> (usize, u64) {
        let slice = self.requested.get(from..=to.min(self.steps)).unwrap_or(&[]);
        let mut best = (from, 0);
        for (k, &v) in slice.iter().enumerate() {
            if v > best.1 {
                best = (from + k, v);
            }
        }
        best
    }

    /// The bands alive at `k` on the x axis, where [`Timeline::requested`]`[k]` counts the
    /// bytes after the first `k` entries: allocated before entry `k` (a band starting at 0
    /// may have been alive before the trace) and not freed before it.
    pub fn alive_at(&self, k: usize) -> impl Iterator<Item = (usize, &Band)> {
        self.bands
            .iter()
            .enumerate()
            .filter(move |(_, b)| (b.start < k || b.start == 0) && b.end.is_none_or(|e| e >= k))
    }
}

impl Snapshot {
    /// Devices with segments or trace entries, in order.
    pub fn devices(&self) -> Vec<i64> {
        let mut d: Vec<i64> = self.segments.iter().map(|s| s.device).collect();
        d.extend(
            self.device_traces
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.is_empty())
                .map(|(i, _)| i as i64),
        );
        d.sort_unstable();
        d.dedup();
        d
    }

    /// The device's trace, empty when none was recorded.
    pub fn trace(&self, device: i64) -> &[TraceEntry] {
        usize::try_from(device)
            .ok()
            .and_then(|d| self.device_traces.get(d))
            .map_or(&[], |t| t.as_slice())
    }

    /// Each block's address (the segment's plus the sizes before it where the snapshot
    /// does not say), with the block.
    fn blocks_of(&self, device: i64) -> impl Iterator<Item = (u64, &super::Block)> {
        self.segments
            .iter()
            .filter(move |s| s.device == device)
            .flat_map(|s| {
                let mut at = unsigned(s.address);
                s.blocks.iter().map(move |b| {
                    let addr = b.address.map_or(at, unsigned);
                    at = addr + unsigned(b.size);
                    (addr, b)
                })
            })
    }

    /// The figures of `device`, `largest` of its active blocks named.
    pub fn summary(&self, device: i64, largest: usize) -> Summary {
        self.summary_of(device, largest, &self.timeline(device))
    }

    /// [`Snapshot::summary`] from the device's timeline, already built: building it walks
    /// the whole trace, which a caller that also draws it need not do twice.
    pub fn summary_of(&self, device: i64, largest: usize, t: &Timeline) -> Summary {
        let segs = self.segments.iter().filter(|s| s.device == device);
        let reserved = segs.clone().map(|s| unsigned(s.total_size)).sum();
        let active = || self.blocks_of(device).filter(|(_, b)| b.is_active());
        let allocated = active()
            .filter(|(_, b)| b.state == super::ACTIVE_ALLOCATED)
            .map(|(_, b)| unsigned(b.size))
            .sum();
        let requested = active().map(|(_, b)| unsigned(b.requested())).sum();
        let mut blocks: Vec<(String, u64, u64)> = active()
            .map(|(addr, b)| {
                let name = frames_name(&b.frames).unwrap_or("(unnamed)");
                (name.to_string(), unsigned(b.size), addr)
            })
            .collect();
        blocks.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        blocks.truncate(largest);
        let trace = self.trace(device);
        Summary {
            device,
            segments: segs.count(),
            reserved,
            allocated,
            active: active().map(|(_, b)| unsigned(b.size)).sum(),
            requested,
            events: trace.len(),
            peak_requested: t.requested.iter().copied().max().unwrap_or(0),
            peak_reserved: t.reserved.iter().copied().max().unwrap_or(0),
            ooms: trace
                .iter()
                .filter(|e| e.action == "oom")
                .map(|e| (unsigned(e.size), e.device_free.map_or(0, unsigned)))
                .collect(),
            largest: blocks,
        }
    }

    /// What is wrong with the snapshot's structure: blocks that do not tile their segment
    /// (sizes that do not add up, addresses that do not follow on), or segment figures that
    /// disagree with their blocks. Empty for a sound snapshot.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, s) in self.segments.iter().enumerate() {
            let sum: i64 = s.blocks.iter().map(|b| b.size).sum();
            if sum != s.total_size {
                out.push(format!(
                    "segment {i} at {:#x}: its blocks add up to {sum} bytes, not its {}",
                    s.address, s.total_size
                ));
            }
            let mut at = s.address;
            for (j, b) in s.blocks.iter().enumerate() {
                if let Some(a) = b.address.filter(|&a| a != at) {
                    out.push(format!(
                        "segment {i}, block {j}: at {a:#x}, but the blocks before it end at {at:#x}"
                    ));
                }
                at = b.address.unwrap_or(at) + b.size;
            }
            let allocated: i64 = s
                .blocks
                .iter()
                .filter(|b| b.state == super::ACTIVE_ALLOCATED)
                .map(|b| b.size)
                .sum();
            if s.segment_type.is_empty() {
                continue; // an older snapshot without the segment's own figures
            }
            if allocated != s.allocated_size {
                out.push(format!(
                    "segment {i}: allocated_size {} but its allocated blocks hold {allocated}",
                    s.allocated_size
                ));
            }
        }
        out
    }

    /// The per-tensor timeline of `device`, built as PyTorch's viewer builds its "Active
    /// Memory Timeline": an `alloc` opens a band, the matching free closes it, a free with
    /// no `alloc` in the trace (and a block alive at the dump with none) was alive from the
    /// start.
    pub fn timeline(&self, device: i64) -> Timeline {
        let trace = self.trace(device);
        let mut bands: Vec<Band> = Vec::new();
        let mut open: std::collections::HashMap<u64, usize> = Default::default();
        for (i, e) in trace.iter().enumerate() {
            let addr = e.addr.map_or(0, unsigned);
            let name = || frames_name(&e.frames).unwrap_or("(unnamed)").to_string();
            match e.action.as_str() {
                "alloc" => {
                    open.insert(addr, bands.len());
                    bands.push(Band {
                        name: name(),
                        bytes: unsigned(e.size),
                        addr,
                        start: i,
                        end: None,
                        frames: e.frames.clone(),
                    });
                }
                "free_completed" | "free" => match open.remove(&addr) {
                    Some(b) => bands[b].end = Some(i),
                    None => bands.push(Band {
                        name: name(),
                        bytes: unsigned(e.size),
                        addr,
                        start: 0,
                        end: Some(i),
                        frames: e.frames.clone(),
                    }),
                },
                _ => {}
            }
        }
        for (addr, b) in self.blocks_of(device) {
            if b.state == super::ACTIVE_ALLOCATED && !open.contains_key(&addr) {
                bands.push(Band {
                    name: frames_name(&b.frames).unwrap_or("(unnamed)").to_string(),
                    bytes: unsigned(b.requested()),
                    addr,
                    start: 0,
                    end: None,
                    frames: b.frames.clone(),
                });
            }
        }
        let summary_reserved = self
            .segments
            .iter()
            .filter(|s| s.device == device)
            .map(|s| unsigned(s.total_size))
            .sum();
        let summary_requested = self
            .blocks_of(device)
            .filter(|(_, b)| b.is_active())
            .map(|(_, b)| unsigned(b.requested()))
            .sum();
        Timeline {
            bands,
            steps: trace.len(),
            reserved: backwards(trace, summary_reserved, |d| d.0),
            requested: backwards(trace, summary_requested, |d| d.1),
        }
    }
}
