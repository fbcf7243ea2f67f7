//! Reading the recorder's fields: a string, a count, and the error that names the field.

use super::error::SnapshotError;
use super::unpickle::{Items, P, describe, item};

pub(super) fn bad(why: String) -> SnapshotError {
    SnapshotError::BadField {
        place: "recorder".to_string(),
        why,
    }
}

pub(super) fn text(d: &Items, key: &str) -> Result<String, SnapshotError> {
    match item(d, key) {
        None | Some(P::None) => Ok(String::new()),
        Some(P::Str(s)) => Ok(s.to_string()),
        Some(o) => Err(bad(format!("'{key}' is {}, not a string", describe(o)))),
    }
}

pub(super) fn count(d: &Items, key: &str) -> Result<u64, SnapshotError> {
    match item(d, key) {
        None | Some(P::None) => Ok(0),
        Some(P::Int(v)) => u64::try_from(*v).map_err(|_| bad(format!("'{key}' is negative ({v})"))),
        Some(o) => Err(bad(format!("'{key}' is {}, not an integer", describe(o)))),
    }
}
