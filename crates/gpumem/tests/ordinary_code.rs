//! The recorder on ordinary code and bad input (issue 44, item 4): what
//! `reference/pytorch/ordinary_code.py` saw `pytorch/record.py` do, checked against the
//! templates' own source. No PyTorch is needed: the record is committed with the SHA-256 of
//! every input, and a stale record fails.
//!
//! - a template written for a GPU (`.to(DEVICE)`, `.cuda()`, `device="cuda"`,
//!   `torch.autocast("cuda")`, `torch.compile`, `torch.cuda.synchronize()`) records unchanged:
//!   the batch made on the host is on the host, the labels made on the card are not, compile
//!   and autocast are stated;
//! - a step whose sizes depend on the data records, each such op at the line that made it;
//! - a mistake in the step names the template's line and the op, in one line, exit 2;
//! - a path that is not a `.py` file, a folder and a missing file: one line, exit 2;
//! - the summary into a closed pipe: exit 0, no traceback.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn record() -> Value {
    let path = root().join("reference/pytorch/ordinary/ordinary.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn case<'a>(r: &'a Value, name: &str) -> &'a Value {
    &r["cases"][name]
}

/// The 1-based line of `file` holding `marker` (exactly one).
fn line_of(file: &str, marker: &str) -> usize {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "{file}: {marker:?} on {lines:?}");
    lines[0]
}

fn texts(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_record_is_fresh() {
    let r = record();
    for input in r["inputs"].as_array().unwrap() {
        let rel = input["path"].as_str().unwrap();
        let bytes = std::fs::read(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let now: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            input["sha256"].as_str().unwrap(),
            now,
            "{rel} changed: run `python reference/pytorch/ordinary_code.py`"
        );
    }
}

#[test]
fn a_template_written_for_a_gpu_records_unchanged() {
    let r = record();
    let c = case(&r, "gpu_style");
    assert_eq!(c["exit"], 0, "{c}");
    let rec = &c["recorder"];
    let host = texts(&rec["on_host"]);
    // `torch.randn(...).cuda()`: the host tensor is on the host, its copy on the card;
    // `torch.randint(..., device=DEVICE)` was made on the card.
    assert_eq!(
        host.iter().filter(|n| n.as_str() == "aten::randn").count(),
        1,
        "{host:?}"
    );
    assert!(!host.iter().any(|n| n.contains("randint")), "{host:?}");
    let approximate: Vec<&str> = rec["approximate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kernel"].as_str().unwrap())
        .collect();
    assert!(approximate.contains(&"torch.compile"), "{approximate:?}");
    assert!(
        texts(&rec["cuda_difference_facts"]).contains(&"autocast".to_string()),
        "autocast(\"cuda\") in the step is stated"
    );
}

#[test]
fn a_step_whose_sizes_depend_on_the_data_records_each_at_its_line() {
    let r = record();
    let c = case(&r, "data_dependent");
    assert_eq!(c["exit"], 0, "{c}");
    // At their largest the sizes are affine in the batch: any batch can be asked.
    assert_eq!(c["recorder"]["affine"], true, "{c}");
    let file = "reference/pytorch/ordinary/data_dependent.py";
    let approximate = c["recorder"]["approximate"].as_array().unwrap();
    for (op, marker) in [
        ("aten::index.Tensor", "# data: a boolean mask"),
        ("aten::nonzero", "# data: nonzero"),
        ("aten::_unique2", "# data: unique"),
        ("aten::_local_scalar_dense", "# data: a value read"),
    ] {
        let at = format!("data_dependent.py:{}", line_of(file, marker));
        let entry = approximate
            .iter()
            .find(|a| a["kernel"].as_str().unwrap().starts_with(op))
            .unwrap_or_else(|| panic!("{op}: not stated in {approximate:?}"));
        let what = entry["what"].as_str().unwrap();
        assert!(what.contains(&at), "{op}: {what} (expected {at})");
        if op != "aten::_local_scalar_dense" {
            assert_eq!(entry["bound"], true, "{op}");
            assert!(entry["bytes"].as_u64().unwrap() > 0, "{op}");
        }
    }
}

#[test]
fn a_mistake_in_the_step_names_the_line_and_the_op() {
    let r = record();
    let c = case(&r, "step_error");
    assert_eq!(c["exit"], 2, "{c}");
    let err = texts(&c["stderr"]);
    assert_eq!(err.len(), 1, "one line: {err:?}");
    let at = format!(
        "step_error.py:{}",
        line_of("reference/pytorch/ordinary/step_error.py", "# the mistake")
    );
    assert!(err[0].starts_with("record.py: "), "{err:?}");
    assert!(err[0].contains(&at), "{} lacks {at}", err[0]);
    assert!(err[0].contains("in aten::sub"), "{}", err[0]);
}

#[test]
fn bad_paths_and_a_closed_pipe_get_one_line_or_none() {
    let r = record();
    for name in ["not_python", "folder", "missing"] {
        let c = case(&r, name);
        assert_eq!(c["exit"], 2, "{name}: {c}");
        let err = texts(&c["stderr"]);
        assert_eq!(err.len(), 1, "{name}: {err:?}");
        assert!(err[0].starts_with("record.py: "), "{name}: {err:?}");
    }
    let c = case(&r, "closed_pipe");
    assert_eq!(c["exit"], 0, "{c}");
    assert!(
        !texts(&c["stderr"]).iter().any(|l| l.contains("Traceback")),
        "{c}"
    );
    assert_eq!(texts(&c["stdout"]).len(), 1, "head -1 kept one line");
}
