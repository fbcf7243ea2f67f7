//! The recorder's account of CUDA's kernels, as data: which kernels it recorded as CUDA runs
//! them (`recorder.cuda_kernels`), and what those kernels allocate that the recording leaves
//! out (`recorder.approximate`), with its size where one is known.

use super::error::SnapshotError;
use super::fields::{bad, count, text};
use super::unpickle::{Items, P, describe, item};

/// One kernel the recorder substituted for the CPU's: the op, the kernel CUDA runs for it on
/// the recorded card, how often, and why the kernels before it were refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelCall {
    pub op: String,
    /// `as` in the recording: `native_dropout`, `flash`, `efficient`, `cudnn`, `math`.
    #[serde(rename = "as")]
    pub kernel: String,
    pub calls: u64,
    pub refused: String,
}

/// What a recorded kernel allocates inside itself that the recording does not hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Approximation {
    /// The CUDA kernel (`_efficient_attention_backward`, …).
    pub kernel: String,
    pub what: String,
    /// Its size, where it can be known without the card.
    pub bytes: Option<u64>,
    /// A measurement on a card, where one was made.
    pub measured: Option<String>,
    /// The recording holds it at its upper bound, `bytes` (an op whose output's size
    /// depends on the data), rather than leaving it out.
    pub bound: bool,
}

impl Approximation {
    /// One line: the kernel, what the recording does about it (its words), the bytes where
    /// known, and what a card measured.
    pub fn line(&self) -> String {
        let mut out = format!("{}: {}", self.kernel, self.what);
        if let Some(b) = self.bytes {
            out.push_str(&format!(": {b} B"));
        }
        if let Some(m) = &self.measured {
            out.push_str(&format!("; measured: {m}"));
        }
        out
    }
}

fn dicts<T>(
    r: &Items,
    key: &str,
    each: impl Fn(&Items) -> Result<T, SnapshotError>,
) -> Result<Vec<T>, SnapshotError> {
    match item(r, key) {
        None | Some(P::None) => Ok(Vec::new()),
        Some(P::List(l)) => l
            .borrow()
            .iter()
            .map(|v| match v {
                P::Dict(d) => each(&d.borrow()),
                o => Err(bad(format!("'{key}' holds {}, not a dict", describe(o)))),
            })
            .collect(),
        Some(o) => Err(bad(format!("'{key}' is {}, not a list", describe(o)))),
    }
}

/// `recorder.cuda_kernels` (empty in a recording made before the recorder substituted them).
pub(super) fn kernel_calls(r: &Items) -> Result<Vec<KernelCall>, SnapshotError> {
    dicts(r, "cuda_kernels", |d| {
        Ok(KernelCall {
            op: text(d, "op")?,
            kernel: text(d, "as")?,
            calls: count(d, "calls")?,
            refused: text(d, "refused")?,
        })
    })
}

/// `recorder.approximate`.
pub(super) fn approximations(r: &Items) -> Result<Vec<Approximation>, SnapshotError> {
    dicts(r, "approximate", |d| {
        let bytes = match item(d, "bytes") {
            None | Some(P::None) => None,
            Some(_) => Some(count(d, "bytes")?),
        };
        let measured = match item(d, "measured") {
            None | Some(P::None) => None,
            Some(_) => Some(text(d, "measured")?),
        };
        let bound = matches!(item(d, "bound"), Some(P::Bool(true)));
        Ok(Approximation {
            kernel: text(d, "kernel")?,
            what: text(d, "what")?,
            bytes,
            measured,
            bound,
        })
    })
}

/// `recorder.card.compute_capability`: the card the kernels were recorded for ("9.0"), empty
/// in a recording made before the recorder substituted them.
pub(super) fn card_capability(r: &Items) -> Result<String, SnapshotError> {
    match item(r, "card") {
        None | Some(P::None) => Ok(String::new()),
        Some(P::Dict(d)) => text(&d.borrow(), "compute_capability"),
        Some(o) => Err(bad(format!("'card' is {}, not a dict", describe(o)))),
    }
}
