//! Memory snapshots in PyTorch's format: what `torch.cuda.memory._snapshot()` returns and
//! `_dump_snapshot()` pickles, so that a run of the engine opens in PyTorch's own tools
//! (pytorch.org/memory_viz, `python -m torch.cuda._memory_viz`) with the step's tensor names,
//! and a snapshot PyTorch wrote on a real GPU reads back here ([`Snapshot::read`]).
//!
//! A device records its history once asked (`Device::record_memory_history`); the snapshot
//! is its segments now and that history ([`build`]). [`format`] is the dictionary key for
//! key, [`read`] the pickle out (serde-pickle) and back in (a small reader of plain-data
//! pickles: PyTorch's files share memoized frames, which serde-pickle's reader cannot follow),
//! [`summary`] what a snapshot says (figures, peaks, the per-tensor timeline's bands).

mod approximate;
pub mod build;
mod decode;
mod error;
mod fields;
pub mod format;
pub mod read;
mod recorded;
pub mod summary;
mod unpickle;

pub use approximate::{Approximation, KernelCall};
pub use error::SnapshotError;
pub use format::{
    ACTIVE_ALLOCATED, ACTIVE_PENDING_FREE, AllocatorSettings, Block, FRAME_FILE, Frame, Frames,
    INACTIVE, Segment, Snapshot, TraceEntry, frames_name,
};
pub use recorded::{Affine, CudaDifference, CudaFact, Recorded};
pub use summary::{Band, Summary, Timeline};

#[cfg(test)]
mod tests;
