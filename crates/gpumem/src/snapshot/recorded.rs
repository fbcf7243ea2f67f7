//! What `pytorch/record.py` adds to a snapshot under its own top-level key, `recorder`: which
//! template and PyTorch recorded it, at which batch, and each allocation's bytes as an affine
//! function of the batch. PyTorch's tools ignore the key; the replay reads it to ask another
//! batch without recording again and to add the workspaces a GPU would take.

use super::approximate::{
    Approximation, KernelCall, approximations, card_capability, kernel_calls,
};
use super::error::SnapshotError;
use super::fields::{bad, count, text};
use super::unpickle::{Items, P, describe, item};

/// The recorder's description of its trace (written back under the same keys, so that a
/// test can build a recorded snapshot without PyTorch).
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// The compute capability the kernels were recorded for (`"9.0"`; empty in a recording
    /// made before the recorder ran CUDA's kernels).
    pub card_capability: String,
    /// The kernels recorded as CUDA runs them on the recorded card.
    pub cuda_kernels: Vec<KernelCall>,
    /// What those kernels allocate that the recording leaves out.
    pub approximate: Vec<Approximation>,
}

impl serde::Serialize for Recorded {
    /// Under record.py's keys: the notes on CUDA as `cuda_differences` (the sentences) and
    /// `cuda_difference_facts` (their ids, in the same order).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(12))?;
        m.serialize_entry("template", &self.template)?;
        m.serialize_entry("torch", &self.torch)?;
        m.serialize_entry("batch", &self.batch)?;
        m.serialize_entry("steps", &self.steps)?;
        m.serialize_entry("affine", &self.affine)?;
        m.serialize_entry("not_in_trace", &self.not_in_trace)?;
        let texts: Vec<&str> = self
            .cuda_differences
            .iter()
            .map(|d| d.text.as_str())
            .collect();
        let facts: Vec<CudaFact> = self.cuda_differences.iter().map(|d| d.fact).collect();
        m.serialize_entry("cuda_differences", &texts)?;
        m.serialize_entry("cuda_difference_facts", &facts)?;
        m.serialize_entry("cuda_host", &self.cuda_host)?;
        m.serialize_entry(
            "card",
            &serde_json::json!({ "compute_capability": self.card_capability }),
        )?;
        m.serialize_entry("cuda_kernels", &self.cuda_kernels)?;
        m.serialize_entry("approximate", &self.approximate)?;
        m.end()
    }
}

/// What one of the recorder's notes on CUDA is about: the id `pytorch/record.py` writes
/// beside the note's sentence (its `cuda_difference_facts`, one per `cuda_differences`
/// entry). The replay acts on this id, never on the sentence's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CudaFact {
    /// cuBLAS's workspaces, taken through the allocator on CUDA (the replay adds them).
    CublasWorkspaces,
    /// An optimizer's `step` counters, on the host on CUDA (`cuda_host` lists them).
    HostStepCounters,
    /// CUDA's autocast casts other ops than the CPU's.
    Autocast,
    /// CUDA picks another scaled_dot_product_attention kernel.
    Attention,
    /// An id this reader does not know, or a note written with no id (a recording made
    /// before record.py wrote them): its words are all there is.
    #[serde(other)]
    Other,
}

impl CudaFact {
    /// The fact record.py's id `id` names (`Other` for an id this reader does not know).
    pub fn from_id(id: &str) -> CudaFact {
        use serde::Deserialize;
        use serde::de::value::{Error, StrDeserializer};
        CudaFact::deserialize(StrDeserializer::<Error>::new(id)).unwrap_or(CudaFact::Other)
    }
}

/// One of the recorder's notes on CUDA: its fact, and its words for the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDifference {
    pub fact: CudaFact,
    pub text: String,
}

impl CudaDifference {
    /// The note `text` on the fact `fact`, as record.py wrote them.
    pub fn new(fact: CudaFact, text: impl Into<String>) -> CudaDifference {
        CudaDifference {
            fact,
            text: text.into(),
        }
    }
}

impl serde::Serialize for CudaDifference {
    /// As the recorder writes it in `cuda_differences`: the sentence.
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

/// The notes on CUDA: `cuda_differences`' sentences, each with its id from
/// `cuda_difference_facts`; a recording without ids (made before record.py wrote them) has
/// each note as `CudaFact::Other`, its words not read for a fact.
fn differences(r: &Items) -> Result<Vec<CudaDifference>, SnapshotError> {
    let sentences = texts(r, "cuda_differences")?;
    let ids = texts(r, "cuda_difference_facts")?;
    if matches!(item(r, "cuda_difference_facts"), None | Some(P::None)) {
        return Ok(sentences
            .into_iter()
            .map(|t| CudaDifference::new(CudaFact::Other, t))
            .collect());
    }
    if ids.len() != sentences.len() {
        return Err(bad(format!(
            "'cuda_difference_facts' has {} ids for {} 'cuda_differences'",
            ids.len(),
            sentences.len()
        )));
    }
    Ok(ids
        .iter()
        .zip(sentences)
        .map(|(id, t)| CudaDifference::new(CudaFact::from_id(id), t))
        .collect())
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
        cuda_differences: differences(&r)?,
        cuda_host: places(&r, "cuda_host")?,
        card_capability: card_capability(&r)?,
        cuda_kernels: kernel_calls(&r)?,
        approximate: approximations(&r)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUBLAS: &str = "cuBLAS workspaces: on CUDA each (handle, stream) takes one workspace";

    /// The `recorder` entry of a top-level dict `{"recorder": r}`, read as a snapshot is.
    fn read(r: serde_json::Value) -> Result<Recorded, SnapshotError> {
        let top = serde_json::json!({ "recorder": r });
        let bytes = serde_pickle::to_vec(&top, serde_pickle::SerOptions::new().proto_v2())
            .expect("pickles");
        let P::Dict(d) = super::super::unpickle::unpickle(&bytes, &mut |_| {}).expect("reads")
        else {
            panic!("not a dict");
        };
        Ok(recorded(&d.borrow())?.expect("a recorder entry"))
    }

    #[test]
    fn a_fact_is_its_id_not_its_words() {
        let r = read(serde_json::json!({
            "cuda_differences": [CUBLAS, "Adam: counters on the host", "a new note"],
            "cuda_difference_facts": ["attention", "autocast", "not_known_here"],
        }))
        .unwrap();
        let facts: Vec<CudaFact> = r.cuda_differences.iter().map(|d| d.fact).collect();
        assert_eq!(
            facts,
            [CudaFact::Attention, CudaFact::Autocast, CudaFact::Other]
        );
        assert_eq!(r.cuda_differences[0].text, CUBLAS);
    }

    #[test]
    fn every_id_record_py_writes_is_a_fact() {
        for (id, fact) in [
            ("cublas_workspaces", CudaFact::CublasWorkspaces),
            ("host_step_counters", CudaFact::HostStepCounters),
            ("autocast", CudaFact::Autocast),
            ("attention", CudaFact::Attention),
        ] {
            assert_eq!(CudaFact::from_id(id), fact);
        }
    }

    #[test]
    fn a_recording_without_ids_has_only_words() {
        let r = read(serde_json::json!({ "cuda_differences": [CUBLAS] })).unwrap();
        assert_eq!(
            r.cuda_differences,
            [CudaDifference::new(CudaFact::Other, CUBLAS)]
        );
    }

    #[test]
    fn ids_and_sentences_must_pair_up() {
        let e = read(serde_json::json!({
            "cuda_differences": [CUBLAS],
            "cuda_difference_facts": [],
        }))
        .unwrap_err();
        assert!(format!("{e}").contains("0 ids for 1"), "{e}");
    }

    #[test]
    fn the_facts_are_written_back_beside_their_words() {
        let rec = Recorded {
            cuda_differences: vec![
                CudaDifference::new(CudaFact::Attention, CUBLAS),
                CudaDifference::new(CudaFact::HostStepCounters, "Adam"),
            ],
            ..Recorded::default()
        };
        let back = read(serde_json::to_value(&rec).unwrap()).unwrap();
        assert_eq!(back.cuda_differences, rec.cuda_differences);
    }
}
