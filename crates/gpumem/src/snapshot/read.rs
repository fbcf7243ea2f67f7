//! Writing a snapshot as a pickle and reading one back — ours, or one PyTorch wrote on a GPU.
//!
//! Reading goes through a generic pickle value first, so that each failure names what is
//! wrong: not a pickle (or cut short), a pickle of something else, or a segment or trace
//! entry whose field has the wrong type.

use super::format::{Segment, Snapshot, TraceEntry};
use super::unpickle::{UnpickleError, unpickle};
use serde_pickle::{HashableValue, SerOptions, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    #[error("not a memory snapshot: {0}")]
    NotSnapshot(String),
    #[error("not a memory snapshot: {place}: {why}")]
    BadField { place: String, why: String },
    #[error("the snapshot cannot be pickled: {0}")]
    Encode(String),
}

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
        let bytes = std::fs::read(path).map_err(|error| SnapshotError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Snapshot::from_pickle(&bytes)
    }

    /// Reads a snapshot from pickle bytes. A list of segments alone (what
    /// `torch.cuda.memory_snapshot()` returns) is taken as a snapshot without traces, as
    /// PyTorch's `_memory_viz.py` takes it.
    pub fn from_pickle(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        let value = unpickle(bytes).map_err(|e| pickle_error(bytes, e))?;
        match value {
            Value::Dict(d) => from_dict(d),
            Value::List(items) if !items.is_empty() && items.iter().all(is_segment) => {
                Ok(Snapshot {
                    segments: segments(items)?,
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

fn key(name: &str) -> HashableValue {
    HashableValue::String(name.to_string())
}

fn is_segment(v: &Value) -> bool {
    matches!(v, Value::Dict(d) if d.contains_key(&key("blocks")))
}

/// A few words for what a pickle holds instead of a snapshot.
fn describe(v: &Value) -> String {
    match v {
        Value::List(l) => format!("a list of {} item(s)", l.len()),
        Value::Tuple(t) => format!("a tuple of {} item(s)", t.len()),
        Value::Dict(_) => "a dict".to_string(),
        Value::String(_) | Value::Bytes(_) => "a string".to_string(),
        Value::None => "None".to_string(),
        _ => "a single value".to_string(),
    }
}

fn from_dict(mut d: BTreeMap<HashableValue, Value>) -> Result<Snapshot, SnapshotError> {
    let Some(segs) = d.remove(&key("segments")) else {
        let keys: Vec<String> = d.keys().take(8).map(|k| format!("{k:?}")).collect();
        return Err(SnapshotError::NotSnapshot(format!(
            "a dict without 'segments' (its keys: {})",
            keys.join(", ")
        )));
    };
    let Value::List(segs) = segs else {
        return Err(SnapshotError::NotSnapshot(format!(
            "'segments' is {}, not a list",
            describe(&segs)
        )));
    };
    let device_traces = match d.remove(&key("device_traces")) {
        None | Some(Value::None) => Vec::new(),
        Some(Value::List(devices)) => traces(devices)?,
        Some(other) => {
            return Err(SnapshotError::NotSnapshot(format!(
                "'device_traces' is {}, not a list",
                describe(&other)
            )));
        }
    };
    let allocator_settings = match d.remove(&key("allocator_settings")) {
        None | Some(Value::None) => None,
        Some(v) => Some(field(v, "allocator_settings")?),
    };
    Ok(Snapshot {
        segments: segments(segs)?,
        device_traces,
        allocator_settings,
    })
}

/// `v` as a `T`, or an error naming `place`.
fn field<T: serde::de::DeserializeOwned>(v: Value, place: &str) -> Result<T, SnapshotError> {
    serde_pickle::from_value(v).map_err(|e| SnapshotError::BadField {
        place: place.to_string(),
        why: e.to_string(),
    })
}

fn segments(items: Vec<Value>) -> Result<Vec<Segment>, SnapshotError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| field(v, &format!("segment {i}")))
        .collect()
}

fn traces(devices: Vec<Value>) -> Result<Vec<Vec<TraceEntry>>, SnapshotError> {
    devices
        .into_iter()
        .enumerate()
        .map(|(d, events)| match events {
            Value::List(events) => events
                .into_iter()
                .enumerate()
                .map(|(i, v)| field(v, &format!("device {d}, trace entry {i}")))
                .collect(),
            other => Err(SnapshotError::NotSnapshot(format!(
                "the trace of device {d} is {}, not a list",
                describe(&other)
            ))),
        })
        .collect()
}
