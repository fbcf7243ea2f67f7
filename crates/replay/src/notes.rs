//! What the reader of a replay should know beyond its figures, as values: the settings' and
//! the version's caveats, the trace's oddities, and the recorder's facts the replay does
//! not model. Each says itself in words ([`Display`](std::fmt::Display)); the JSON holds the
//! words.

use crate::source::Plan;
use gpumem::size::format_bytes;
use gpumem::snapshot::{Approximation, CudaFact, Recorded};
use gpumem::versions::{ComputeCapability, TorchVersion};
use std::fmt;

/// One note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// An allocator setting accepted with no effect on the card (gpumem's words).
    Setting(String),
    /// `--torch` on a GPU's trace sets only the error's words.
    TorchOnGpuTrace,
    /// The version asked takes an earlier release's rules (gpumem's words).
    Rules(String),
    /// The trace was recorded with another PyTorch than the one asked.
    RecordedWith { with: String, asked: TorchVersion },
    /// A compute capability asked of a GPU's trace, which has its own workspaces.
    CapabilityOnGpuTrace,
    /// No compute capability asked: the recording's card's sizes the workspaces.
    CapabilityOfRecording(ComputeCapability),
    /// A compute capability other than the recording's card's: it sizes the workspaces only.
    CapabilityNotRecording {
        asked: ComputeCapability,
        recorded: ComputeCapability,
    },
    /// Allocations CUDA keeps on the host, left out: how many, and their bytes.
    OnHost { count: usize, bytes: u64 },
    /// `empty_cache()` calls in the trace, replayed.
    EmptyCaches(usize),
    /// Times the run's allocator released segments to serve a request.
    OwnReleases(usize),
    /// Frees requested and not completed by the trace's end.
    Pending(usize),
    /// Tensors alive before the trace, allocated first.
    AliveAtStart,
    /// What a GPU takes that the recorded trace cannot show (the recorder's words).
    NotInTrace(String),
    /// Where CUDA differs from the recorded step, and the replay does not model it (the
    /// recorder's words).
    OnCuda(String),
    /// What a kernel recorded as CUDA's allocates that the recording leaves out, with its
    /// size where known (the recorder's data).
    Approximate(Approximation),
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Setting(t) | Note::Rules(t) => f.write_str(t),
            Note::TorchOnGpuTrace => f.write_str(
                "a GPU's trace holds its own cuBLAS workspaces: --torch sets only the error's \
                 words here, nothing is added",
            ),
            Note::RecordedWith { with, asked } => write!(
                f,
                "the tensors are those PyTorch {with} made when recording (its zero_grad() and \
                 optimizer loop); PyTorch {asked} sets only the workspaces and the error's words \
                 here"
            ),
            Note::CapabilityOfRecording(cc) => write!(
                f,
                "compute capability {cc}, the card the recording's kernels are for, sizes the \
                 workspaces (--compute-capability)"
            ),
            Note::CapabilityNotRecording { asked, recorded } => write!(
                f,
                "compute capability {asked} sizes the workspaces only: the recording's kernels \
                 (attention's, cuDNN's) are those of a {recorded} card; record again with \
                 --compute-capability {asked} for that card's"
            ),
            Note::CapabilityOnGpuTrace => {
                f.write_str("--compute-capability sizes workspaces, and a GPU's trace has its own")
            }
            Note::OnHost { count, bytes } => write!(
                f,
                "{count} allocations ({}) that CUDA keeps on the host were left out (the \
                 recorder's cuda_host: e.g. Adam's step counters)",
                format_bytes(*bytes)
            ),
            Note::EmptyCaches(n) => write!(f, "{n} empty_cache() calls in the trace, replayed"),
            Note::OwnReleases(n) => write!(
                f,
                "{n} times the run's allocator gave segments back to serve a request (its retry \
                 or garbage collection): the replay's allocator does that by its own rules on \
                 this card"
            ),
            Note::Pending(n) => write!(
                f,
                "{n} frees requested but not completed by the trace's end: those blocks stay \
                 allocated"
            ),
            Note::AliveAtStart => f.write_str(
                "tensors alive before the trace are allocated first, in address order (their \
                 own order is not in the trace)",
            ),
            Note::NotInTrace(t) => write!(f, "not in this trace: {t}"),
            Note::OnCuda(t) => write!(f, "on CUDA: {t}"),
            Note::Approximate(a) => write!(f, "approximate: {}", a.line()),
        }
    }
}

impl serde::Serialize for Note {
    /// As the text prints it.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The trace's own oddities.
pub(crate) fn of_plan(p: &Plan) -> Vec<Note> {
    let mut n = Vec::new();
    if p.on_host.0 > 0 {
        n.push(Note::OnHost {
            count: p.on_host.0,
            bytes: p.on_host.1,
        });
    }
    if p.empty_caches > 0 {
        n.push(Note::EmptyCaches(p.empty_caches));
    }
    if p.own_releases > 0 {
        n.push(Note::OwnReleases(p.own_releases));
    }
    if p.pending > 0 {
        n.push(Note::Pending(p.pending));
    }
    if p.alive_at_start > 0 {
        n.push(Note::AliveAtStart);
    }
    n
}

/// The recorder's notes that still hold: the workspaces and the host-side counters are the
/// replay's own business (its workspaces line and its [`Note::OnHost`] say what it did), and
/// a recording whose kernels are CUDA's has nothing more to say of attention or autocast
/// than what it lists as approximate.
pub(crate) fn of_recorder(r: &Recorded) -> Vec<Note> {
    let mut n: Vec<Note> = r
        .not_in_trace
        .iter()
        .cloned()
        .map(Note::NotInTrace)
        .collect();
    n.extend(
        r.cuda_differences
            .iter()
            .filter(|d| {
                // The workspaces and the host-side counters are the replay's own business;
                // attention and autocast are recorded as CUDA runs them (the recording's
                // `cuda_kernels`): none is left for the reader to allow for.
                !matches!(
                    d.fact,
                    CudaFact::CublasWorkspaces
                        | CudaFact::HostStepCounters
                        | CudaFact::Attention
                        | CudaFact::Autocast
                )
            })
            .map(|d| Note::OnCuda(d.text.clone())),
    );
    n.extend(r.approximate.iter().cloned().map(Note::Approximate));
    n
}
