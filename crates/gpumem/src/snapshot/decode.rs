//! A pickled snapshot ([`P`]) into the snapshot's types, field by field, so that each
//! failure names its place (`device 0, trace entry 12: 'size' is a string, not an integer`).
//!
//! Two things keep a real run's snapshot (a million trace entries, stacks tens of frames
//! deep) in bounded memory: each distinct frames list becomes one shared [`Frames`] (keyed by
//! the pickle's own object, which PyTorch writes once per stack), and the trace is decoded
//! entry by entry out of the pickled list, each pickled entry freed once decoded.

use super::error::SnapshotError;
use super::format::{AllocatorSettings, Block, Frame, Frames, Segment, Snapshot, TraceEntry};
pub use super::unpickle::describe;
use super::unpickle::{Items, P, item};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Decodes with one cache of frames lists for the whole snapshot.
#[derive(Debug, Default)]
pub struct Decoder {
    frames: HashMap<*const RefCell<Vec<P>>, Frames>,
    /// Keeps every cached list alive, so that no address in `frames` is reused.
    keep: Vec<Rc<RefCell<Vec<P>>>>,
}

/// The value of `key` in a dict's items ([`item`]), where None counts as absent.
fn get<'a>(d: &'a Items, key: &str) -> Option<&'a P> {
    item(d, key).filter(|v| !matches!(v, P::None))
}

fn bad(place: &str, why: String) -> SnapshotError {
    SnapshotError::BadField {
        place: place.to_string(),
        why,
    }
}

fn int(d: &Items, key: &str, place: &str) -> Result<Option<i64>, SnapshotError> {
    match get(d, key) {
        None => Ok(None),
        Some(P::Int(v)) => Ok(Some(*v)),
        Some(P::Bool(b)) => Ok(Some(i64::from(*b))),
        Some(other) => Err(bad(
            place,
            format!("'{key}' is {}, not an integer", describe(other)),
        )),
    }
}

fn need<T>(v: Option<T>, key: &str, place: &str) -> Result<T, SnapshotError> {
    v.ok_or_else(|| bad(place, format!("no '{key}'")))
}

fn string(d: &Items, key: &str, place: &str) -> Result<Option<String>, SnapshotError> {
    match get(d, key) {
        None => Ok(None),
        Some(P::Str(s)) => Ok(Some(s.to_string())),
        Some(other) => Err(bad(
            place,
            format!("'{key}' is {}, not a string", describe(other)),
        )),
    }
}

fn boolean(d: &Items, key: &str, place: &str) -> Result<bool, SnapshotError> {
    Ok(int(d, key, place)?.unwrap_or(0) != 0)
}

fn dict<'a>(v: &'a P, place: &str) -> Result<std::cell::Ref<'a, Vec<(P, P)>>, SnapshotError> {
    match v {
        P::Dict(d) => Ok(d.borrow()),
        other => Err(bad(place, format!("{}, not a dict", describe(other)))),
    }
}

fn list<'a>(
    v: Option<&'a P>,
    key: &str,
    place: &str,
) -> Result<Option<&'a Rc<RefCell<Vec<P>>>>, SnapshotError> {
    match v {
        None => Ok(None),
        Some(P::List(l)) => Ok(Some(l)),
        Some(other) => Err(bad(
            place,
            format!("'{key}' is {}, not a list", describe(other)),
        )),
    }
}

/// Whether a pickled value is a segment (a dict with blocks).
pub fn is_segment(v: &P) -> bool {
    matches!(v, P::Dict(d) if get(&d.borrow(), "blocks").is_some())
}

impl Decoder {
    pub fn snapshot(&mut self, d: &Items) -> Result<Snapshot, SnapshotError> {
        let Some(segs) = get(d, "segments") else {
            let keys: Vec<String> = d
                .iter()
                .take(8)
                .map(|(k, _)| match k {
                    P::Str(s) => format!("{s:?}"),
                    other => describe(other),
                })
                .collect();
            return Err(SnapshotError::NotSnapshot(format!(
                "a dict without 'segments' (its keys: {})",
                keys.join(", ")
            )));
        };
        let P::List(segs) = segs else {
            return Err(SnapshotError::NotSnapshot(format!(
                "'segments' is {}, not a list",
                describe(segs)
            )));
        };
        let device_traces = match get(d, "device_traces") {
            None => Vec::new(),
            Some(P::List(devices)) => self.traces(&devices.borrow())?,
            Some(other) => {
                return Err(SnapshotError::NotSnapshot(format!(
                    "'device_traces' is {}, not a list",
                    describe(other)
                )));
            }
        };
        let allocator_settings = match get(d, "allocator_settings") {
            None => None,
            Some(v) => Some(settings(&dict(v, "allocator_settings")?)?),
        };
        Ok(Snapshot {
            segments: self.segments(&segs.borrow())?,
            device_traces,
            allocator_settings,
            recorder: super::recorded::recorded(d)?,
        })
    }

    pub fn segments(&mut self, items: &[P]) -> Result<Vec<Segment>, SnapshotError> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| self.segment(v, &format!("segment {i}")))
            .collect()
    }

    fn segment(&mut self, v: &P, place: &str) -> Result<Segment, SnapshotError> {
        let d = dict(v, place)?;
        let blocks = match list(get(&d, "blocks"), "blocks", place)? {
            Some(l) => l
                .borrow()
                .iter()
                .enumerate()
                .map(|(j, b)| self.block(b, &format!("{place}, block {j}")))
                .collect::<Result<_, _>>()?,
            None => return Err(bad(place, "no 'blocks'".to_string())),
        };
        Ok(Segment {
            device: int(&d, "device", place)?.unwrap_or(0),
            address: need(int(&d, "address", place)?, "address", place)?,
            total_size: need(int(&d, "total_size", place)?, "total_size", place)?,
            stream: int(&d, "stream", place)?.unwrap_or(0),
            segment_type: string(&d, "segment_type", place)?.unwrap_or_default(),
            allocated_size: int(&d, "allocated_size", place)?.unwrap_or(0),
            active_size: int(&d, "active_size", place)?.unwrap_or(0),
            requested_size: int(&d, "requested_size", place)?.unwrap_or(0),
            is_expandable: boolean(&d, "is_expandable", place)?,
            frames: self.frames(get(&d, "frames"), place)?,
            blocks,
        })
    }

    fn block(&mut self, v: &P, place: &str) -> Result<Block, SnapshotError> {
        let d = dict(v, place)?;
        Ok(Block {
            address: int(&d, "address", place)?,
            size: need(int(&d, "size", place)?, "size", place)?,
            requested_size: int(&d, "requested_size", place)?,
            state: need(string(&d, "state", place)?, "state", place)?,
            frames: self.frames(get(&d, "frames"), place)?,
        })
    }

    /// Each device's trace, decoded out of the pickled list: each pickled entry is dropped
    /// (and, held by nothing else, freed) as soon as it is decoded.
    fn traces(&mut self, devices: &[P]) -> Result<Vec<Vec<TraceEntry>>, SnapshotError> {
        let mut out = Vec::with_capacity(devices.len());
        for (dev, events) in devices.iter().enumerate() {
            let P::List(events) = events else {
                return Err(SnapshotError::NotSnapshot(format!(
                    "the trace of device {dev} is {}, not a list",
                    describe(events)
                )));
            };
            let pickled = std::mem::take(&mut *events.borrow_mut());
            let mut trace = Vec::with_capacity(pickled.len());
            for (i, e) in pickled.into_iter().enumerate() {
                trace.push(self.entry(&e, dev, i)?);
            }
            out.push(trace);
        }
        Ok(out)
    }

    fn entry(&mut self, v: &P, dev: usize, i: usize) -> Result<TraceEntry, SnapshotError> {
        let place = || format!("device {dev}, trace entry {i}");
        let P::Dict(d) = v else {
            return Err(bad(&place(), format!("{}, not a dict", describe(v))));
        };
        let d = d.borrow();
        // The common case without a `format!` per entry: every field as expected.
        let p = "";
        let fields = (|| {
            Ok::<_, SnapshotError>(TraceEntry {
                action: need(string(&d, "action", p)?, "action", p)?,
                addr: int(&d, "addr", p)?,
                size: int(&d, "size", p)?.unwrap_or(0),
                stream: int(&d, "stream", p)?.unwrap_or(0),
                time_us: int(&d, "time_us", p)?,
                device_free: int(&d, "device_free", p)?,
                frames: Frames::default(),
            })
        })();
        let mut e = fields.map_err(|err| match err {
            SnapshotError::BadField { why, .. } => bad(&place(), why),
            other => other,
        })?;
        e.frames = self.frames(get(&d, "frames"), p).map_err(|err| match err {
            SnapshotError::BadField { why, .. } => bad(&place(), why),
            other => other,
        })?;
        Ok(e)
    }

    /// A frames list, decoded once per pickled list and shared after that.
    fn frames(&mut self, v: Option<&P>, place: &str) -> Result<Frames, SnapshotError> {
        let Some(l) = list(v, "frames", place)? else {
            return Ok(Frames::default());
        };
        if let Some(f) = self.frames.get(&Rc::as_ptr(l)) {
            return Ok(f.clone());
        }
        let frames: Frames = l
            .borrow()
            .iter()
            .map(|f| {
                let d = dict(f, place)?;
                Ok(Frame {
                    filename: need(string(&d, "filename", place)?, "filename", place)?,
                    line: need(int(&d, "line", place)?, "line", place)?,
                    name: need(string(&d, "name", place)?, "name", place)?,
                    role: None,
                })
            })
            .collect::<Result<Vec<Frame>, SnapshotError>>()?
            .into();
        if Rc::strong_count(l) > 1 {
            self.frames.insert(Rc::as_ptr(l), frames.clone());
            self.keep.push(l.clone());
        }
        Ok(frames)
    }
}

fn settings(d: &Items) -> Result<AllocatorSettings, SnapshotError> {
    let place = "allocator_settings";
    let threshold = match get(d, "garbage_collection_threshold") {
        None => 0.0,
        Some(P::Float(f)) => *f,
        Some(P::Int(i)) => *i as f64,
        Some(other) => {
            return Err(bad(
                place,
                format!(
                    "'garbage_collection_threshold' is {}, not a number",
                    describe(other)
                ),
            ));
        }
    };
    Ok(AllocatorSettings {
        alloc_conf: string(d, "PYTORCH_CUDA_ALLOC_CONF", place)?.unwrap_or_default(),
        max_split_size: int(d, "max_split_size", place)?.unwrap_or(0),
        garbage_collection_threshold: threshold,
        expandable_segments: boolean(d, "expandable_segments", place)?,
    })
}
