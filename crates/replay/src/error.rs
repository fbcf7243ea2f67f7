//! Why a replay was refused, by kind, each with a message that says what is wrong (the
//! command line prints it; the page can show it).

use gpumem::snapshot::SnapshotError;

/// A replay refused: the snapshot, the trace, the settings or the batch, or the allocator.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The bytes are not a snapshot.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// No trace on the device asked, or several and none asked.
    #[error("{0}")]
    Device(String),
    /// A trace that is corrupt, or that the replay cannot take as it is.
    #[error("{0}")]
    Trace(String),
    /// The card and the settings are not valid together.
    #[error("{0}")]
    Settings(String),
    /// A batch the trace cannot be replayed at.
    #[error("{0}")]
    Batch(String),
    /// The engine's allocator failed other than by running out of memory.
    #[error("the replay's allocator failed: {0}")]
    Allocator(String),
}

/// `return Err(ReplayError::Kind(format!(…)))`.
macro_rules! refuse {
    ($kind:ident, $($words:tt)*) => {
        return Err($crate::ReplayError::$kind(format!($($words)*)))
    };
}
pub(crate) use refuse;

pub(crate) type Result<T> = std::result::Result<T, ReplayError>;
