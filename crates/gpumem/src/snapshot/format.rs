//! The snapshot's dictionary, key for key as `torch.cuda.memory._snapshot()` builds it
//! (`torch/csrc/cuda/memory_snapshot.cpp`) and as `torch/cuda/_memory_viz.py` and
//! `MemoryViz.js` read it.
//!
//! Integers are `i64`, as PyTorch's `int64_t`: the viewer's own unpickler turns an 8-byte
//! long into a number but a longer one into a `BigInt` that its arithmetic cannot mix, so
//! nothing is written unsigned. Fields PyTorch writes that the engine has no use for
//! (`segment_pool_id`, `user_metadata`, …) are ignored on reading; fields older snapshots
//! lack are defaulted.

use crate::role::Role;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// `torch.cuda.memory._snapshot()`: the segments now, and each device's recorded events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub segments: Vec<Segment>,
    /// One list per device, oldest event first.
    #[serde(default)]
    pub device_traces: Vec<Vec<TraceEntry>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator_settings: Option<AllocatorSettings>,
    /// What `pytorch/record.py` says of a trace it recorded (its key `recorder`); the engine's
    /// own snapshots have none.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub recorder: Option<super::Recorded>,
}

/// A segment: memory the allocator holds from the device (one `cudaMalloc`, or one mapped
/// range of an expandable segment).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    #[serde(default)]
    pub device: i64,
    pub address: i64,
    pub total_size: i64,
    #[serde(default)]
    pub stream: i64,
    /// `"large"` or `"small"`: the pool.
    #[serde(default)]
    pub segment_type: String,
    /// Bytes in allocated blocks.
    #[serde(default)]
    pub allocated_size: i64,
    /// Bytes in allocated blocks and blocks waiting on another stream.
    #[serde(default)]
    pub active_size: i64,
    /// Bytes the callers of the active blocks asked for.
    #[serde(default)]
    pub requested_size: i64,
    #[serde(default)]
    pub is_expandable: bool,
    /// Where the segment was allocated from.
    #[serde(default)]
    pub frames: Frames,
    /// The segment's blocks in address order; they tile it.
    pub blocks: Vec<Block>,
}

/// A piece of a segment: in use by a tensor, or cached and free.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Absent in older snapshots: the segment's address plus the sizes before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<i64>,
    pub size: i64,
    /// Absent in older snapshots, where it is taken as `size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_size: Option<i64>,
    /// [`ACTIVE_ALLOCATED`], [`ACTIVE_PENDING_FREE`] or [`INACTIVE`].
    pub state: String,
    #[serde(default)]
    pub frames: Frames,
}

/// One of the allocator's actions, as the trace records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// `alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`,
    /// `segment_map`, `segment_unmap`, `oom`, `snapshot`, …
    pub action: String,
    /// Absent for `oom`, which has `device_free` in its place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<i64>,
    /// What PyTorch records: the bytes requested for `alloc` and the frees (before
    /// rounding), the segment's or the range's bytes for segment actions, the rounded
    /// request for `oom`.
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub stream: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_us: Option<i64>,
    /// For `oom`: the device's free bytes when the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_free: Option<i64>,
    #[serde(default)]
    pub frames: Frames,
}

/// A stack frame. The engine has no Python stack: its one frame per tensor names the tensor
/// (`name`, e.g. `layer1.weight` or `z1`), so the viewer shows the step's own names. Frames
/// are equal when PyTorch's fields are: the role is an annotation a file does not keep, so a
/// snapshot read back equals the one written.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Frame {
    pub filename: String,
    pub line: i64,
    pub name: String,
    /// The engine's tensor's role: in Rust only, not in PyTorch's format (a snapshot read
    /// from a file has none).
    #[serde(skip)]
    pub role: Option<Role>,
}

/// `allocator_settings`: the `PYTORCH_CUDA_ALLOC_CONF` in force. The viewer does not read
/// it; it tells a reader of the file what the allocator was doing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AllocatorSettings {
    #[serde(rename = "PYTORCH_CUDA_ALLOC_CONF", default)]
    pub alloc_conf: String,
    /// `SIZE_MAX` as `int64_t` (-1) when unset, as PyTorch writes it.
    #[serde(default)]
    pub max_split_size: i64,
    /// 0 when unset.
    #[serde(default)]
    pub garbage_collection_threshold: f64,
    #[serde(default)]
    pub expandable_segments: bool,
}

/// A block in use by a tensor.
pub const ACTIVE_ALLOCATED: &str = "active_allocated";
/// A freed block still used by another stream (never written by the engine: one stream).
pub const ACTIVE_PENDING_FREE: &str = "active_pending_free";
/// A cached, free block.
pub const INACTIVE: &str = "inactive";

/// The file name PyTorch's viewer and the engine's frames use for the engine's tensors.
pub const FRAME_FILE: &str = "gpumem";

impl PartialEq for Frame {
    fn eq(&self, other: &Frame) -> bool {
        (&self.filename, self.line, &self.name) == (&other.filename, other.line, &other.name)
    }
}

impl Eq for Frame {}

impl Frame {
    /// The frame that names a tensor, and gives its role when known.
    pub fn tensor(label: &str, role: Option<Role>) -> Frame {
        Frame {
            filename: FRAME_FILE.to_string(),
            line: 0,
            name: label.to_string(),
            role,
        }
    }
}

/// A list of frames, shared: PyTorch's files hold one list per distinct stack, referenced by
/// every block and trace entry that has it, and a real run's trace has a million entries
/// with stacks tens of frames deep, so a copy per entry would cost gigabytes. Reading keeps
/// one list per stack; cloning shares it. It derefs to `[Frame]` and (de)serializes as a
/// list, as before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frames(Arc<[Frame]>);

impl std::ops::Deref for Frames {
    type Target = [Frame];
    fn deref(&self) -> &[Frame] {
        &self.0
    }
}

impl From<Vec<Frame>> for Frames {
    fn from(v: Vec<Frame>) -> Frames {
        Frames(v.into())
    }
}

impl Serialize for Frames {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for Frames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Frames, D::Error> {
        Vec::<Frame>::deserialize(d).map(Frames::from)
    }
}

/// The name a list of frames gives its block: the innermost frame's function name (the
/// engine's tensor label), or `None` without frames.
pub fn frames_name(frames: &[Frame]) -> Option<&str> {
    frames.first().map(|f| f.name.as_str())
}

impl Block {
    /// The bytes asked for, `size` where an older snapshot does not say.
    pub fn requested(&self) -> i64 {
        self.requested_size.unwrap_or(self.size)
    }

    pub fn is_active(&self) -> bool {
        self.state == ACTIVE_ALLOCATED || self.state == ACTIVE_PENDING_FREE
    }
}
