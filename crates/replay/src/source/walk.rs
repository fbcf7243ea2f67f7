//! The walk over a trace that makes the replay's [`Plan`]: each entry by the rules of the
//! parent module, and the tensors alive before the trace put first.

use super::{ABSURD, Kind, Op, Plan, Size};
use crate::error::{ReplayError, Result, refuse};
use gpumem::snapshot::{Affine, Frames, Snapshot, TraceEntry};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Refuses a trace on several streams: PyTorch keeps a pool per stream, which the engine's
/// allocator (one stream) does not model.
fn one_stream(trace: &[TraceEntry]) -> Result<()> {
    let mut streams: Vec<i64> = trace.iter().map(|e| e.stream).collect();
    streams.sort_unstable();
    streams.dedup();
    if streams.len() > 1 {
        refuse!(
            Trace,
            "the trace allocates on {} CUDA streams ({}): PyTorch keeps each stream's freed \
             blocks for that stream, and the engine's allocator models one stream; replaying it \
             as one would reuse blocks PyTorch keeps apart, so it refuses",
            streams.len(),
            streams
                .iter()
                .map(|s| format!("{s:#x}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

fn checked_size(e: &TraceEntry, i: usize) -> Result<u64> {
    let size = u64::try_from(e.size).map_err(|_| {
        ReplayError::Trace(format!(
            "trace entry {i} ({}) has a negative size, {} bytes",
            e.action, e.size
        ))
    })?;
    if size >= ABSURD {
        refuse!(
            Trace,
            "trace entry {i} ({}) asks for {size} bytes, over a pebibyte: no card holds that; \
             the trace is corrupt",
            e.action
        );
    }
    Ok(size)
}

/// The walk over the trace.
struct Walk<'a> {
    snap: &'a Snapshot,
    kind: Kind,
    ops: Vec<Op>,
    frames: Vec<Frames>,
    live: HashMap<i64, (usize, u64)>,
    freed: HashSet<i64>,
    /// Tensors alive at the start: address → (slot, bytes), found by their frees.
    start: BTreeMap<i64, (usize, u64)>,
    /// Segments the trace frees without allocating: alive at its start.
    start_segments: Vec<(i64, i64)>,
    allocated_segments: HashSet<i64>,
    host: HashSet<usize>,
    skipped: HashSet<i64>,
    on_host: (usize, u64),
    allocs: usize,
    empty_caches: usize,
    own_releases: usize,
    pending: HashSet<i64>,
}

/// The plan of `snap`'s trace on `device`.
pub fn plan(snap: &Snapshot, device: i64) -> Result<Plan> {
    let trace = snap.trace(device);
    one_stream(trace)?;
    let kind = if snap.recorder.is_some() {
        Kind::Recorded
    } else {
        Kind::Gpu
    };
    let host = snap
        .recorder
        .as_ref()
        .map(|r| r.cuda_host.iter().copied().collect())
        .unwrap_or_default();
    let mut w = Walk {
        snap,
        kind,
        ops: Vec::with_capacity(trace.len() / 2),
        frames: Vec::new(),
        live: HashMap::new(),
        freed: HashSet::new(),
        start: BTreeMap::new(),
        start_segments: Vec::new(),
        allocated_segments: HashSet::new(),
        host,
        skipped: HashSet::new(),
        on_host: (0, 0),
        allocs: 0,
        empty_caches: 0,
        own_releases: 0,
        pending: HashSet::new(),
    };
    for (i, e) in trace.iter().enumerate() {
        w.entry(trace, i, e)?;
    }
    w.finish(device)
}

impl Walk<'_> {
    fn entry(&mut self, trace: &[TraceEntry], i: usize, e: &TraceEntry) -> Result<()> {
        let addr = e.addr.unwrap_or(-1);
        match e.action.as_str() {
            "alloc" => self.alloc(i, e, addr)?,
            "free_requested" => {
                self.pending.insert(addr);
            }
            "free_completed" | "free" => self.free(i, e, addr)?,
            "segment_alloc" | "segment_map" => {
                self.allocated_segments.insert(addr);
            }
            "segment_free" | "segment_unmap" => self.segment_free(trace, i, e, addr),
            "oom" if self.kind == Kind::Gpu => {
                let bytes = checked_size(e, i)?;
                let slot = self.frames.len();
                self.frames.push(e.frames.clone());
                self.ops.push(Op::SourceOom {
                    slot,
                    bytes,
                    entry: i,
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn alloc(&mut self, i: usize, e: &TraceEntry, addr: i64) -> Result<()> {
        let size = checked_size(e, i)?;
        let index = self.allocs;
        self.allocs += 1;
        if self.host.contains(&index) {
            self.skipped.insert(addr);
            self.on_host.0 += 1;
            self.on_host.1 += size;
            return Ok(());
        }
        if self.live.contains_key(&addr) {
            refuse!(
                Trace,
                "trace entry {i} allocates {addr:#x}, which is already allocated and not freed: \
                 the trace is corrupt"
            );
        }
        let slot = self.frames.len();
        self.frames.push(e.frames.clone());
        self.live.insert(addr, (slot, size));
        self.freed.remove(&addr);
        self.ops.push(Op::Alloc {
            slot,
            size: self.size(index, size, i)?,
            entry: Some(i),
        });
        Ok(())
    }

    /// The allocation's bytes, affine in the batch where the recorder found them so.
    fn size(&self, index: usize, size: u64, i: usize) -> Result<Size> {
        let Some(Affine::Form { at_zero, per_row }) =
            self.snap.recorder.as_ref().map(|r| &r.affine)
        else {
            return Ok(Size::fixed(size));
        };
        match (at_zero.get(index), per_row.get(index)) {
            (Some(&a), Some(&b)) => Ok(Size {
                at_zero: a,
                per_row: b,
            }),
            _ => refuse!(
                Trace,
                "trace entry {i} is allocation {index}, but the recorder's affine form has {} \
                 entries: the snapshot was edited after recording",
                at_zero.len()
            ),
        }
    }

    fn free(&mut self, i: usize, e: &TraceEntry, addr: i64) -> Result<()> {
        self.pending.remove(&addr);
        if self.skipped.remove(&addr) {
            return Ok(());
        }
        let size = checked_size(e, i)?;
        if let Some((slot, bytes)) = self.live.remove(&addr) {
            if bytes != size {
                refuse!(
                    Trace,
                    "trace entry {i} frees {size} bytes at {addr:#x}, which was allocated with \
                     {bytes}: the trace is corrupt"
                );
            }
            self.freed.insert(addr);
            self.ops.push(Op::Free {
                slot,
                entry: Some(i),
            });
            return Ok(());
        }
        if self.freed.contains(&addr) || self.start.contains_key(&addr) {
            refuse!(
                Trace,
                "trace entry {i} frees {addr:#x} a second time: the trace is corrupt"
            );
        }
        if self.kind == Kind::Recorded {
            refuse!(
                Trace,
                "trace entry {i} frees {addr:#x}, which the recorded trace never allocated \
                 (a recorder's trace starts empty): the trace is corrupt"
            );
        }
        // Alive when the trace began: allocated before its first entry.
        let slot = self.frames.len();
        self.frames.push(e.frames.clone());
        self.start.insert(addr, (slot, size));
        self.freed.insert(addr);
        self.ops.push(Op::Free {
            slot,
            entry: Some(i),
        });
        Ok(())
    }

    fn segment_free(&mut self, trace: &[TraceEntry], i: usize, e: &TraceEntry, addr: i64) {
        if self.kind == Kind::Recorded {
            return;
        }
        if !self.allocated_segments.remove(&addr) {
            self.start_segments.push((addr, e.size));
        }
        // The last of a run decides what the run was.
        let next = trace[i + 1..]
            .iter()
            .find(|n| !matches!(n.action.as_str(), "segment_free" | "segment_unmap"));
        let same_run = trace
            .get(i + 1)
            .is_some_and(|n| matches!(n.action.as_str(), "segment_free" | "segment_unmap"));
        if same_run {
            return;
        }
        let allocator_continues = next
            .is_some_and(|n| matches!(n.action.as_str(), "segment_alloc" | "segment_map" | "oom"));
        if allocator_continues {
            self.own_releases += 1;
        } else {
            self.empty_caches += 1;
            self.ops.push(Op::EmptyCache { entry: i });
        }
    }

    /// Checks the tensors alive at the start against the segments the trace began with, and
    /// puts their allocations first, in address order (their order before the trace is not
    /// in it).
    fn finish(mut self, device: i64) -> Result<Plan> {
        let dumped: Vec<(i64, i64)> = self
            .snap
            .segments
            .iter()
            .filter(|s| s.device == device)
            .map(|s| (s.address, s.total_size))
            .collect();
        let held = |addr: i64| {
            dumped
                .iter()
                .chain(&self.start_segments)
                .any(|&(a, size)| addr >= a && addr < a.saturating_add(size))
        };
        if let Some((&addr, _)) = self.start.iter().find(|(a, _)| !held(**a)) {
            refuse!(
                Trace,
                "the trace frees {addr:#x} without allocating it, and no segment of the dump or \
                 of the trace holds that address: a truncated trace without a dump to rebuild \
                 its start from (dump the snapshot with its segments, or record the trace from \
                 the start)"
            );
        }
        // Active blocks of the dump the trace never allocated: alive throughout.
        for seg in self.snap.segments.iter().filter(|s| s.device == device) {
            let mut at = seg.address;
            for b in &seg.blocks {
                let addr = b.address.unwrap_or(at);
                at = addr + b.size;
                if b.is_active()
                    && !self.live.contains_key(&addr)
                    && !self.start.contains_key(&addr)
                    && !self.skipped.contains(&addr)
                {
                    let size = u64::try_from(b.requested()).unwrap_or(0);
                    let slot = self.frames.len();
                    self.frames.push(b.frames.clone());
                    self.start.insert(addr, (slot, size));
                }
            }
        }
        let mut ops: Vec<Op> = self
            .start
            .values()
            .map(|&(slot, bytes)| Op::Alloc {
                slot,
                size: Size::fixed(bytes),
                entry: None,
            })
            .collect();
        let alive_at_start = ops.len();
        ops.append(&mut self.ops);
        let r = self.snap.recorder.as_ref();
        Ok(Plan {
            kind: self.kind,
            device,
            ops,
            frames: self.frames,
            batch: r.map(|r| r.batch),
            not_affine: match r.map(|r| &r.affine) {
                Some(Affine::Form { .. }) => None,
                Some(Affine::Not(why)) => Some(why.clone()),
                None => Some("a GPU's trace has the batch it ran with".into()),
            },
            entries: self.snap.trace(device).len(),
            alive_at_start,
            empty_caches: self.empty_caches,
            own_releases: self.own_releases,
            on_host: self.on_host,
            pending: self.pending.len(),
        })
    }
}
