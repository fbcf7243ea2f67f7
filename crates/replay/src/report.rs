//! What a replay found, as a typed report: the trace, the card and its settings, whether the
//! step fits or where it runs out, the peaks, the largest batch and the notes. It serializes
//! to the JSON `memviz replay --json` prints; [`ReplayReport::text`] is its text.

use crate::largest::Largest;
use crate::notes::Note;
use crate::source::Kind;
use gpumem::snapshot::{Frame, Snapshot};
use gpumem::versions::TorchVersion;
use serde::{Serialize, Serializer};

/// One replay's answer.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// The snapshot, as the settings named it.
    pub file: String,
    pub kind: Kind,
    pub device: i64,
    pub trace_entries: usize,
    /// Tensor allocations replayed (before workspaces were added).
    pub allocations: usize,
    pub alive_at_start: usize,
    pub card: CardReport,
    pub workspaces: Workspaces,
    /// The batch replayed (a recorded trace only).
    pub batch: Option<u64>,
    pub recorded_batch: Option<u64>,
    pub affine: bool,
    pub fits: bool,
    /// The run's own out-of-memory entry, whose request fits this card: the replay stops.
    pub source_oom_fits_at: Option<usize>,
    /// `max_memory_allocated()`.
    pub peak_allocated: u64,
    /// `max_memory_reserved()`.
    pub peak_reserved: u64,
    pub at_peak: AtPeak,
    pub end: End,
    pub failure: Option<Failure>,
    pub largest_batch: Option<LargestBatch>,
    pub notes: Vec<Note>,
    /// The replayed run as PyTorch's snapshot, when the settings asked to keep it.
    #[serde(skip)]
    pub snapshot: Option<Snapshot>,
}

/// The card and the settings the replay ran with.
#[derive(Debug, Clone, Serialize)]
pub struct CardReport {
    pub capacity: u64,
    /// `the ideal card: 15.90 GiB`, `80.00 GiB`.
    pub words: String,
    pub context_memory: u64,
    pub memory_fraction: Option<f64>,
    /// The `PYTORCH_CUDA_ALLOC_CONF` text in force (empty: the defaults).
    pub alloc_conf: String,
    pub max_split_size: Option<u64>,
    pub garbage_collection_threshold: Option<f64>,
    pub expandable_segments: bool,
    /// The PyTorch asked, and the release whose rules apply.
    #[serde(serialize_with = "version")]
    pub torch: Option<TorchVersion>,
    #[serde(serialize_with = "version")]
    pub torch_rules: Option<TorchVersion>,
    /// Where the version came from, in words.
    pub torch_from: String,
    /// The exception PyTorch raises (text only).
    #[serde(skip)]
    pub exception: &'static str,
}

fn version<S: Serializer>(v: &Option<TorchVersion>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// The cuBLAS workspaces added to a recorded trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Workspaces {
    /// Kept once taken (one per handle and library), and their bytes.
    pub kept: usize,
    pub kept_bytes: u64,
    /// Per-call ones, freed after their product.
    pub per_call: usize,
    /// The kept ones, in the order taken.
    pub labels: Vec<Workspace>,
    /// The card that confirmed these rules (`an NVIDIA H200 with PyTorch 2.11`), or None:
    /// read from PyTorch's source, not measured on a card.
    pub measured_on: Option<String>,
}

/// One kept workspace: `cublaslt_workspace (main thread)` and its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workspace {
    pub label: String,
    pub bytes: u64,
}

/// The moment `memory_allocated()` first reached its peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtPeak {
    /// Its trace entry (`None`: before the trace, or a workspace added).
    pub entry: Option<usize>,
    pub allocated: u64,
    pub reserved: u64,
    pub reserved_unallocated: u64,
    pub largest_free_block: u64,
}

/// What is held when the replay ends (or stops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct End {
    pub allocated: u64,
    pub reserved: u64,
}

/// The request that did not fit, and PyTorch's error for it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// Its trace entry (`None`: a workspace added, or a tensor alive before the trace).
    pub entry: Option<usize>,
    pub tensor: String,
    pub requested: u64,
    pub tried: u64,
    pub exception: &'static str,
    /// PyTorch's sentence, in the asked version's words.
    pub message: String,
    pub allocated: u64,
    pub reserved: u64,
    pub free: Option<u64>,
    /// Where the tensor was made, innermost first.
    pub frames: Vec<Frame>,
}

/// The largest batch that fits, and how many replays the search took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LargestBatch {
    pub batch: Option<u64>,
    #[serde(serialize_with = "answer")]
    pub answer: Largest,
    pub replays: usize,
}

fn answer<S: Serializer>(l: &Largest, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match l {
        Largest::Batch(_) => "batch",
        Largest::None => "none",
        Largest::Unbounded => "unbounded",
    })
}

impl LargestBatch {
    pub(crate) fn of(answer: Largest, replays: usize) -> LargestBatch {
        let batch = match answer {
            Largest::Batch(b) => Some(b),
            _ => None,
        };
        LargestBatch {
            batch,
            answer,
            replays,
        }
    }
}

/// What [`build`] puts together.
pub(crate) struct Parts<'a> {
    pub name: &'a str,
    pub plan: &'a crate::source::Plan,
    pub allocations: usize,
    pub setup: &'a crate::settings::Setup,
    pub workspaces: Workspaces,
    pub outcome: crate::engine::Outcome,
    pub largest: Option<LargestBatch>,
    pub notes: Vec<Note>,
}

/// The report of one replay.
pub(crate) fn build(p: Parts<'_>) -> ReplayReport {
    let (plan, s, o) = (p.plan, p.setup, p.outcome);
    let c = &s.card.config;
    let failure = o.failure.map(|f| Failure {
        entry: f.entry,
        tensor: plan.label(f.slot).to_string(),
        requested: f.oom.requested,
        tried: f.oom.tried,
        exception: s.card.exception,
        message: f.oom.pytorch_sentence(),
        allocated: f.oom.allocated,
        reserved: f.oom.reserved,
        free: f.oom.free,
        frames: plan.frames[f.slot].iter().cloned().collect(),
    });
    ReplayReport {
        file: p.name.to_string(),
        kind: plan.kind,
        device: plan.device,
        trace_entries: plan.entries,
        allocations: p.allocations,
        alive_at_start: plan.alive_at_start,
        card: CardReport {
            capacity: s.capacity,
            words: s.card_words.clone(),
            context_memory: c.context_memory,
            memory_fraction: c.memory_fraction,
            alloc_conf: s.alloc_conf.clone(),
            max_split_size: c.max_split_size,
            garbage_collection_threshold: c.gc_threshold,
            expandable_segments: c.expandable_segments,
            torch: s.torch.map(|t| t.asked),
            torch_rules: s.torch.map(|t| t.release.version),
            torch_from: s.torch_from.clone(),
            exception: s.card.exception,
        },
        workspaces: p.workspaces,
        batch: (plan.kind == Kind::Recorded).then_some(o.batch),
        recorded_batch: plan.batch,
        affine: plan.not_affine.is_none(),
        fits: failure.is_none(),
        source_oom_fits_at: o.source_oom_fits,
        peak_allocated: o.peak_allocated,
        peak_reserved: o.peak_reserved,
        at_peak: AtPeak {
            entry: o.at_peak.entry,
            allocated: o.at_peak.allocated,
            reserved: o.at_peak.reserved,
            reserved_unallocated: o.at_peak.reserved - o.at_peak.allocated,
            largest_free_block: o.at_peak.largest_free_block,
        },
        end: End {
            allocated: o.end_allocated,
            reserved: o.end_reserved,
        },
        failure,
        largest_batch: p.largest,
        notes: p.notes,
        snapshot: o.snapshot,
    }
}
