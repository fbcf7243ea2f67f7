//! The engine's state and history as PyTorch's snapshot: which event becomes which trace
//! entries, with the sizes PyTorch's `record_trace` callers give them.

use super::format::{
    ACTIVE_ALLOCATED, AllocatorSettings, Block, Frame, Frames, INACTIVE, Segment, Snapshot,
    TraceEntry,
};
use crate::alloc::{
    AllocatorConfig, EventKind, HistoryEvent, Pool, SMALL_SIZE, SegmentInfo, round_size,
};
use crate::role::Role;

/// An engine count as the snapshot's `int64_t` (saturating: no engine count comes near).
pub(crate) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The frames that name a tensor (with its role): one frame, none for an unnamed block.
fn frames(label: &str, role: Option<Role>) -> Frames {
    if label.is_empty() {
        Frames::default()
    } else {
        vec![Frame::tensor(label, role)].into()
    }
}

/// The trace entries of one event. PyTorch records the bytes asked for on `alloc` and on
/// both halves of a free (`requested_size`), the segment's bytes on segment actions, and
/// the rounded request on `oom` (`params.size()`), whose address is replaced by the device's
/// free bytes. A free is one `free_requested` and one `free_completed` here: with one stream
/// nothing waits between them.
pub fn trace_entries(e: &HistoryEvent) -> Vec<TraceEntry> {
    let ev = &e.event;
    let entry = |action: &str, size: u64| TraceEntry {
        action: action.to_string(),
        addr: Some(int(ev.addr)),
        size: int(size),
        stream: 0,
        time_us: Some(int(e.seq)),
        device_free: None,
        frames: frames(&ev.label, ev.role),
    };
    match ev.kind {
        EventKind::Alloc => vec![entry("alloc", ev.requested)],
        EventKind::Free => vec![
            entry("free_requested", ev.requested),
            entry("free_completed", ev.requested),
        ],
        EventKind::SegmentAlloc => vec![entry("segment_alloc", ev.size)],
        EventKind::SegmentFree => vec![entry("segment_free", ev.size)],
        EventKind::SegmentMap => vec![entry("segment_map", ev.size)],
        EventKind::SegmentUnmap => vec![entry("segment_unmap", ev.size)],
        EventKind::Oom => vec![TraceEntry {
            addr: None,
            device_free: Some(int(e.device_free.unwrap_or(0))),
            ..entry("oom", round_size(ev.requested).unwrap_or(ev.requested))
        }],
    }
}

/// One segment of the engine as the snapshot lists it; `made_for` names what it was
/// allocated for, with its role (from the history, when it reaches back that far).
pub fn segment(s: &SegmentInfo, made_for: Option<(&str, Option<Role>)>) -> Segment {
    let active = s.blocks.iter().filter(|b| b.allocated);
    let allocated: u64 = active.clone().map(|b| b.size).sum();
    let requested: u64 = active.map(|b| b.requested).sum();
    let large = match s.pool {
        Some(p) => p == Pool::Large,
        None => s.size > SMALL_SIZE,
    };
    Segment {
        device: 0,
        address: int(s.addr),
        total_size: int(s.size),
        stream: 0,
        segment_type: if large { "large" } else { "small" }.to_string(),
        allocated_size: int(allocated),
        // One stream: no freed block waits, so active is allocated.
        active_size: int(allocated),
        requested_size: int(requested),
        is_expandable: s.expandable,
        frames: made_for.map_or_else(Frames::default, |(label, role)| frames(label, role)),
        blocks: s
            .blocks
            .iter()
            .map(|b| Block {
                address: Some(int(b.addr)),
                size: int(b.size),
                requested_size: Some(int(if b.allocated { b.requested } else { 0 })),
                state: if b.allocated {
                    ACTIVE_ALLOCATED
                } else {
                    INACTIVE
                }
                .to_string(),
                frames: if b.allocated {
                    frames(&b.label, b.role)
                } else {
                    Frames::default()
                },
            })
            .collect(),
    }
}

/// `allocator_settings` for `config`, with PyTorch's encodings of "unset".
pub fn settings(config: &AllocatorConfig) -> AllocatorSettings {
    let mut conf = Vec::new();
    if let Some(m) = config.max_split_size {
        conf.push(format!("max_split_size_mb:{}", m >> 20));
    }
    if let Some(t) = config.gc_threshold {
        conf.push(format!("garbage_collection_threshold:{t}"));
    }
    if config.expandable_segments {
        conf.push("expandable_segments:True".to_string());
    }
    AllocatorSettings {
        alloc_conf: conf.join(","),
        max_split_size: config.max_split_size.map_or(-1, int),
        garbage_collection_threshold: config.gc_threshold.unwrap_or(0.0),
        expandable_segments: config.expandable_segments,
    }
}

/// The snapshot of an allocator whose segments are `segments`, with the recorded `history`
/// (empty when none was recorded) and its settings.
pub fn snapshot<'a>(
    segments: &[SegmentInfo],
    history: impl IntoIterator<Item = &'a HistoryEvent>,
    config: &AllocatorConfig,
) -> Snapshot {
    let history: Vec<&HistoryEvent> = history.into_iter().collect();
    // The label of the request that made each segment: its latest `segment_alloc`.
    let made_for = |addr: u64| {
        history
            .iter()
            .rev()
            .find(|e| e.event.kind == EventKind::SegmentAlloc && e.event.addr == addr)
            .map(|e| (e.event.label.as_str(), e.event.role))
    };
    Snapshot {
        segments: segments
            .iter()
            .map(|s| segment(s, made_for(s.addr)))
            .collect(),
        device_traces: vec![history.iter().flat_map(|e| trace_entries(e)).collect()],
        allocator_settings: Some(settings(config)),
        recorder: None,
    }
}
