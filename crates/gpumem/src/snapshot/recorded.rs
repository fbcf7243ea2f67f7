//! What `pytorch/record.py` adds to a snapshot under its own top-level key, `recorder`: which
//! template and PyTorch recorded it, at which batch, and each allocation's bytes as an affine
//! function of the batch. PyTorch's tools ignore the key; the replay reads it to ask another
//! batch without recording again and to add the workspaces a GPU would take.

use super::error::SnapshotError;
use super::unpickle::{Items, P, describe, item};

/// The recorder's description of its trace (written back under the same keys, so that a
/// test can build a recorded snapshot without PyTorch).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Recorded {
    /// The template file, as the recorder was given it.
    pub template: String,
    /// `torch.__version__` of the PyTorch that recorded it.
    pub torch: String,
    /// The batch the trace was recorded at.
    pub batch: u64,
    /// Training steps recorded.
    pub steps: u64,
    pub affine: Affine,
    /// What a GPU takes through the allocator that this trace cannot show (cuDNN's
    /// workspaces, …), in the recorder's words.
    pub not_in_trace: Vec<String>,
    /// Where CUDA would differ from the recorded (CPU) step: each a fact and its words.
    pub cuda_differences: Vec<CudaDifference>,
    /// The allocations (their places among the trace's `alloc` entries) that CUDA keeps on
    /// the host, such as Adam's `step` counters: in the recorded CPU step, not on a GPU.
    pub cuda_host: Vec<usize>,
}

/// What one of the recorder's notes on CUDA is about. `pytorch/record.py` (format 1) writes
/// each as a sentence, with no id beside it; its head is the topic record.py's own
/// `relevant()` keys on. It is read here, once, so that the replay acts on facts and not
/// on words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaFact {
    /// cuBLAS's workspaces, taken through the allocator on CUDA (the replay adds them).
    CublasWorkspaces,
    /// An optimizer's `step` counters, on the host on CUDA (`cuda_host` lists them).
    HostStepCounters,
    /// CUDA's autocast casts other ops than the CPU's.
    Autocast,
    /// CUDA picks another scaled_dot_product_attention kernel.
    Attention,
    /// A note this reader does not know: its words are all there is.
    Other,
}

/// The heads of record.py's `CUDA_DIFFERENCES`, as its `relevant()` tells them apart.
const TOPICS: [(&str, CudaFact); 4] = [
    ("cuBLAS workspaces", CudaFact::CublasWorkspaces),
    ("Adam", CudaFact::HostStepCounters),
    ("autocast", CudaFact::Autocast),
    ("scaled_dot_product_attention", CudaFact::Attention),
];

/// One of the recorder's notes on CUDA: its fact, and its words for the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDifference {
    pub fact: CudaFact,
    pub text: String,
}

impl CudaDifference {
    /// The note `text` as record.py wrote it.
    pub fn new(text: impl Into<String>) -> CudaDifference {
        let text = text.into();
        let fact = TOPICS
            .iter()
            .find(|(head, _)| text.starts_with(head))
            .map_or(CudaFact::Other, |&(_, f)| f);
        CudaDifference { fact, text }
    }
}

impl serde::Serialize for CudaDifference {
    /// As the recorder writes it: the sentence.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Each `alloc` entry's bytes at B rows, `at_zero[i] + per_row[i] × B`, or why there is no
/// such form.
#[derive(Debug, Clone, PartialEq)]
pub enum Affine {
    Form {
        at_zero: Vec<i64>,
        per_row: Vec<i64>,
    },
    Not(String),
}

impl serde::Serialize for Affine {
    /// As the recorder writes it: `{"affine": true, "bytes_at_zero": …, "bytes_per_row": …}`
    /// or `{"affine": false, "reason": …}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match self {
            Affine::Form { at_zero, per_row } => {
                m.serialize_entry("affine", &true)?;
                m.serialize_entry("bytes_at_zero", at_zero)?;
                m.serialize_entry("bytes_per_row", per_row)?;
            }
            Affine::Not(why) => {
                m.serialize_entry("affine", &false)?;
                m.serialize_entry("reason", why)?;
            }
        }
        m.end()
    }
}

impl Default for Affine {
    fn default() -> Self {
        Affine::Not("no affine form recorded".into())
    }
}

fn bad(why: String) -> SnapshotError {
    SnapshotError::BadField {
        place: "recorder".to_string(),
        why,
    }
}

fn text(d: &Items, key: &str) -> Result<String, SnapshotError> {
    match item(d, key) {
        None | Some(P::None) => Ok(String::new()),
        Some(P::Str(s)) => Ok(s.to_string()),
        Some(o) => Err(bad(format!("'{key}' is {}, not a string", describe(o)))),
    }
}

fn count(d: &Items, key: &str) -> Result<u64, SnapshotError> {
    match item(d, key) {
        None | Some(P::None) => Ok(0),
        Some(P::Int(v)) => u64::try_from(*v).map_err(|_| bad(format!("'{key}' is negative ({v})"))),
        Some(o) => Err(bad(format!("'{key}' is {}, not an integer", describe(o)))),
    }
}

fn texts(d: &Items, key: &str) -> Result<Vec<String>, SnapshotError> {
    match item(d, key) {
        None | Some(P::None) => Ok(Vec::new()),
        Some(P::List(l)) => l
            .borrow()
            .iter()
            .map(|v| match v {
                P::Str(s) => Ok(s.to_string()),
                o => Err(bad(format!("'{key}' holds {}, not a string", describe(o)))),
            })
            .collect(),
        Some(o) => Err(bad(format!("'{key}' is {}, not a list", describe(o)))),
    }
}

fn places(d: &Items, key: &str) -> Result<Vec<usize>, SnapshotError> {
    match item(d, key) {
        None | Some(P::None) => Ok(Vec::new()),
        Some(P::List(l)) => l
            .borrow()
            .iter()
            .map(|v| match v {
                P::Int(i) if *i >= 0 => Ok(*i as usize),
                o => Err(bad(format!("'{key}' holds {}", describe(o)))),
            })
            .collect(),
        Some(o) => Err(bad(format!("'{key}' is {}, not a list", describe(o)))),
    }
}

fn ints(d: &Items, key: &str) -> Result<Vec<i64>, SnapshotError> {
    match item(d, key) {
        Some(P::List(l)) => l
            .borrow()
            .iter()
            .map(|v| match v {
                P::Int(i) => Ok(*i),
                o => Err(bad(format!("'affine.{key}' holds {}", describe(o)))),
            })
            .collect(),
        Some(o) => Err(bad(format!(
            "'affine.{key}' is {}, not a list",
            describe(o)
        ))),
        None => Err(bad(format!("'affine' has no '{key}'"))),
    }
}

fn affine(v: Option<&P>) -> Result<Affine, SnapshotError> {
    let Some(P::Dict(d)) = v else {
        return Ok(Affine::default());
    };
    let d = d.borrow();
    let yes = matches!(item(&d, "affine"), Some(P::Bool(true)) | Some(P::Int(1)));
    if !yes {
        return Ok(Affine::Not(text(&d, "reason")?));
    }
    let (at_zero, per_row) = (ints(&d, "bytes_at_zero")?, ints(&d, "bytes_per_row")?);
    if at_zero.len() != per_row.len() {
        return Err(bad(format!(
            "'affine' has {} constants and {} slopes",
            at_zero.len(),
            per_row.len()
        )));
    }
    Ok(Affine::Form { at_zero, per_row })
}

/// The `recorder` entry of a snapshot's top-level dict, if it has one.
pub fn recorded(d: &Items) -> Result<Option<Recorded>, SnapshotError> {
    let Some(v) = item(d, "recorder") else {
        return Ok(None);
    };
    let P::Dict(r) = v else {
        return Err(bad(format!("{}, not a dict", describe(v))));
    };
    let r = r.borrow();
    Ok(Some(Recorded {
        template: text(&r, "template")?,
        torch: text(&r, "torch")?,
        batch: count(&r, "batch")?,
        steps: count(&r, "steps")?,
        affine: affine(item(&r, "affine"))?,
        not_in_trace: texts(&r, "not_in_trace")?,
        cuda_differences: texts(&r, "cuda_differences")?
            .into_iter()
            .map(CudaDifference::new)
            .collect(),
        cuda_host: places(&r, "cuda_host")?,
    }))
}
