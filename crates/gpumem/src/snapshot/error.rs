//! Why a snapshot could not be written or read: below the reader and its decoder, which
//! both report it.

use std::path::PathBuf;

/// Why a snapshot could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot write the snapshot to {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot read {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the pickle ends too early: the file is truncated (was it still being written?)")]
    Truncated,
    #[error("not a pickle{hint}: {why}")]
    NotPickle { why: String, hint: &'static str },
    /// A file of another kind (a `torch.save` zip, JSON, an image, ...), named by its first
    /// bytes.
    #[error(
        "{} {what}, not a memory snapshot: memviz reads the pickle \
         torch.cuda.memory._dump_snapshot(FILE) writes",
        path.display()
    )]
    OtherFile { path: PathBuf, what: &'static str },
    #[error("not a memory snapshot: {0}")]
    NotSnapshot(String),
    #[error("not a memory snapshot: {place}: {why}")]
    BadField { place: String, why: String },
    #[error("the snapshot cannot be pickled: {0}")]
    Encode(String),
}
