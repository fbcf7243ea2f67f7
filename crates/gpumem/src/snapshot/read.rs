//! Writing a snapshot as a pickle and reading one back — ours, or one PyTorch wrote on a GPU.
//!
//! Reading goes through a generic pickle value first, so that each failure names what is
//! wrong: not a pickle (or cut short), a pickle of something else, or a segment or trace
//! entry whose field has the wrong type.

pub use super::error::SnapshotError;

use super::decode::{Decoder, describe, is_segment};
use super::format::Snapshot;
use super::unpickle::{P, UnpickleError, unpickle};
use serde_pickle::SerOptions;
use std::path::Path;

impl Snapshot {
    /// The snapshot as a pickle of protocol 2, PyTorch's own, which the viewer at
    /// pytorch.org/memory_viz reads (it accepts protocols 2 to 4).
    pub fn to_pickle(&self) -> Result<Vec<u8>, SnapshotError> {
        serde_pickle::to_vec(self, SerOptions::new().proto_v2())
            .map_err(|e| SnapshotError::Encode(e.to_string()))
    }

    /// `torch.cuda.memory._dump_snapshot(path)`.
    pub fn write(&self, path: &Path) -> Result<(), SnapshotError> {
        let bytes = self.to_pickle()?;
        std::fs::write(path, bytes).map_err(|error| SnapshotError::Write {
            path: path.to_path_buf(),
            error,
        })
    }

    /// Reads a snapshot file, as `python -m torch.cuda._memory_viz` does.
    pub fn read(path: &Path) -> Result<Snapshot, SnapshotError> {
        Snapshot::read_with_progress(path, &mut |_, _| {})
    }

    /// [`Snapshot::read`], telling `progress` the bytes read so far and the file's size now
    /// and then (a real run's snapshot is tens of megabytes: seconds to read).
    pub fn read_with_progress(
        path: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Snapshot, SnapshotError> {
        let bytes = std::fs::read(path).map_err(|error| SnapshotError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Snapshot::from_file_bytes(path, &bytes, progress)
    }

    /// A file's bytes read elsewhere (the book's page hands them over) as [`Snapshot::read`]
    /// reads them: a file of another kind is named as such, `path` is what the messages call it.
    pub fn from_file_bytes(
        path: &Path,
        bytes: &[u8],
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Snapshot, SnapshotError> {
        let total = bytes.len() as u64;
        Snapshot::decode(bytes, &mut |at| progress(at as u64, total)).map_err(|e| match e {
            SnapshotError::NotPickle { .. } | SnapshotError::Truncated => match other_kind(bytes) {
                Some(what) => SnapshotError::OtherFile {
                    path: path.to_path_buf(),
                    what,
                },
                None => e,
            },
            e => e,
        })
    }

    /// Reads a snapshot from pickle bytes. A list of segments alone (what
    /// `torch.cuda.memory_snapshot()` returns) is taken as a snapshot without traces, as
    /// PyTorch's `_memory_viz.py` takes it.
    pub fn from_pickle(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        Snapshot::decode(bytes, &mut |_| {})
    }

    fn decode(bytes: &[u8], progress: &mut dyn FnMut(usize)) -> Result<Snapshot, SnapshotError> {
        let value = unpickle(bytes, progress).map_err(|e| pickle_error(bytes, e))?;
        let mut d = Decoder::default();
        match value {
            P::Dict(items) => d.snapshot(&items.borrow()),
            P::List(items)
                if !items.borrow().is_empty() && items.borrow().iter().all(is_segment) =>
            {
                Ok(Snapshot {
                    segments: d.segments(&items.borrow())?,
                    ..Snapshot::default()
                })
            }
            other => Err(SnapshotError::NotSnapshot(format!(
                "the pickle holds {}, not a dict with 'segments' and 'device_traces'",
                describe(&other)
            ))),
        }
    }
}

fn pickle_error(bytes: &[u8], e: UnpickleError) -> SnapshotError {
    let why = match e {
        UnpickleError::Truncated if !bytes.is_empty() => return SnapshotError::Truncated,
        UnpickleError::Truncated => "no bytes".to_string(),
        UnpickleError::Bad(why) => why,
    };
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let hint = match first {
        Some(b'{') | Some(b'[') => " (it looks like JSON)",
        None => " (the file is empty)",
        _ => "",
    };
    SnapshotError::NotPickle { why, hint }
}

/// What a file that is not a pickle is, from its first bytes, in a few words; None where
/// they say nothing (a truncated or damaged pickle, say).
fn other_kind(bytes: &[u8]) -> Option<&'static str> {
    let text = bytes.trim_ascii_start();
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let head = String::from_utf8_lossy(&text[..text.len().min(4096)]).to_ascii_lowercase();
    Some(if bytes.is_empty() {
        "is empty"
    } else if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
        "is a zip archive, as torch.save writes (save the dict \
         torch.cuda.memory._snapshot() returns with pickle.dump)"
    } else if starts(b"\x1f\x8b") {
        "is gzip-compressed (gunzip it first)"
    } else if starts(b"\x89PNG") {
        "is a PNG image"
    } else if text.starts_with(b"<svg") || (text.starts_with(b"<?xml") && head.contains("<svg")) {
        "is an SVG drawing"
    } else if head.starts_with("<html") || head.starts_with("<!doctype html") {
        "is an HTML page"
    } else if text.starts_with(b"{") || text.starts_with(b"[") {
        "looks like JSON"
    } else {
        return None;
    })
}
