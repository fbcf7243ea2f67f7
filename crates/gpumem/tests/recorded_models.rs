//! The recorder's snapshots (`pytorch/record.py`, made by `reference/pytorch/record_models.py`
//! for every model of `pytorch/models/`) against PyTorch's MemTracker on the same step code.
//!
//! For each `fixtures/recorded/NAME.pickle` this reads the snapshot with `gpumem::snapshot`,
//! checks that its dump is its trace's last state, computes the raw peak (the most requested
//! bytes alive at once over the trace) and compares it with `NAME.memtracker.json`: equal, or
//! the difference is the sum of the JSON's `explained` entries, each naming its tensors and
//! evidence. No PyTorch is needed: the fixtures are committed, and a fixture whose inputs
//! (the model file, `record.py`, `recorder/*.py`) changed since it was made fails here.
//! The lesson's network is also planned on the engine: its peak of requested bytes is the
//! recorded one without the allocations CUDA keeps on the host (Adam's step counters and the
//! 0-d tensor foreach adds to them: the snapshot's `recorder.cuda_host`, the JSON's
//! `cuda_delta`). So are the lesson's fixtures of `crates/memviz/tests/fixtures/lesson/`
//! (`reference/pytorch/record_lesson.py`: `reference/pytorch/lesson_step.py` at widths 2000
//! and 5000, up to 86 hidden layers).

use gpumem::lesson::planning_unlimited;
use gpumem::measure::measure_step;
use gpumem::mlp::{MlpConfig, Optimizer};
use gpumem::snapshot::Snapshot;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recorded")
}

fn models() -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(root().join("pytorch/models"))
        .expect("pytorch/models exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".py").map(str::to_string))
        .collect();
    out.sort();
    out
}

fn json(name: &str) -> Value {
    let path = fixtures().join(format!("{name}.memtracker.json"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run reference/pytorch/record_models.py)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

fn snapshot(name: &str) -> Snapshot {
    Snapshot::read(&fixtures().join(format!("{name}.pickle"))).unwrap()
}

fn sha256(rel: &str) -> String {
    let bytes = fs::read(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The raw peak of the trace (requested bytes), and the blocks alive at its end.
/// The inputs a recording's JSON `j` hashed that changed since (their SHA-256 differs),
/// after checking they are the recording's script `script` and the recorder's files
/// (`what` names the recording in the failure).
fn changed_inputs(j: &Value, script: &str, what: &str) -> Vec<String> {
    let mut recorder: Vec<String> = fs::read_dir(root().join("pytorch/recorder"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".py"))
        .map(|n| format!("pytorch/recorder/{n}"))
        .collect();
    recorder.sort();
    let mut expected = vec![script.to_string(), "pytorch/record.py".into()];
    expected.extend(recorder);
    let inputs = j["inputs"].as_array().unwrap();
    let listed: Vec<&str> = inputs.iter().map(|i| i["path"].as_str().unwrap()).collect();
    assert_eq!(listed, expected, "{what}: the inputs hashed");
    inputs
        .iter()
        .filter(|i| sha256(i["path"].as_str().unwrap()) != i["sha256"].as_str().unwrap())
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect()
}

fn raw_peak(s: &Snapshot) -> (u64, BTreeMap<i64, i64>) {
    raw_peak_without(s, &BTreeSet::new())
}

/// The same, leaving out the `alloc` entries at `skip` (indices among the trace's `alloc`
/// entries, as the recorder's `cuda_host` counts them) and their frees.
fn raw_peak_without(s: &Snapshot, skip: &BTreeSet<usize>) -> (u64, BTreeMap<i64, i64>) {
    let mut live = BTreeMap::new();
    let mut skipped = BTreeSet::new();
    let (mut total, mut peak, mut i) = (0i64, 0i64, 0usize);
    for e in s.trace(0) {
        match e.action.as_str() {
            "alloc" => {
                if skip.contains(&i) {
                    skipped.insert(e.addr.unwrap());
                } else {
                    assert!(
                        live.insert(e.addr.unwrap(), e.size).is_none(),
                        "{e:?} twice"
                    );
                    total += e.size;
                }
                i += 1;
            }
            "free_completed" if !skipped.contains(&e.addr.unwrap()) => {
                let size = live
                    .remove(&e.addr.unwrap())
                    .expect("a free of a live block");
                assert_eq!(size, e.size, "{e:?}");
                total -= size;
            }
            _ => {}
        }
        peak = peak.max(total);
    }
    assert!(
        skip.iter().all(|&k| k < i),
        "an index past the trace's {i} allocs"
    );
    (u64::try_from(peak).unwrap(), live)
}

fn indices(v: &Value) -> BTreeSet<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|i| usize::try_from(i.as_u64().unwrap()).unwrap())
        .collect()
}

#[test]
fn every_model_has_a_fresh_fixture() {
    let names = models();
    assert!(names.len() >= 8, "only {} models", names.len());
    let mut stale = Vec::new();
    for name in &names {
        let j = json(name);
        let changed = changed_inputs(&j, &format!("pytorch/models/{name}.py"), name);
        stale.extend(
            changed
                .iter()
                .map(|path| format!("{name}: {path} changed since its recording")),
        );
        assert!(
            j["torch"].as_str().unwrap().starts_with("2."),
            "{name}: torch version"
        );
        assert!(j["command"].as_str().unwrap().contains("record_models.py"));
    }
    assert!(
        stale.is_empty(),
        "stale: {}\nrerun: /work/venv-torch/bin/python reference/pytorch/record_models.py",
        stale.join("\n")
    );
    // No fixture without its model.
    for e in fs::read_dir(fixtures()).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        let stem = n.split('.').next().unwrap().to_string();
        assert!(names.contains(&stem), "{n}: no pytorch/models/{stem}.py");
    }
}

#[test]
fn each_recorded_peak_is_memtrackers_or_explained() {
    let mut report = Vec::new();
    for name in models() {
        let s = snapshot(&name);
        assert!(s.problems().is_empty(), "{name}: {:?}", s.problems());
        let (peak, live) = raw_peak(&s);
        // The dump is the trace's last state: its active blocks are the blocks alive at the end.
        let dumped: BTreeMap<i64, i64> = s
            .segments
            .iter()
            .flat_map(|seg| seg.blocks.iter())
            .filter(|b| b.is_active())
            .map(|b| (b.address.unwrap(), b.requested()))
            .collect();
        assert_eq!(dumped, live, "{name}: the dump is not the trace's end");
        // memviz's own reading of the snapshot (PyTorch's viewer's rules) gives the same peak.
        assert_eq!(
            s.summary(0, 0).peak_requested,
            peak,
            "{name}: memviz's peak"
        );
        let j = json(&name);
        let mt = j["memtracker_peak_bytes"].as_u64().unwrap();
        assert_eq!(
            j["recorded_raw_peak_bytes"].as_u64().unwrap(),
            peak,
            "{name}: Python's count"
        );
        let explained: i64 = j["explained"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let tensors = e["tensors"].as_array().unwrap();
                assert!(
                    !tensors.is_empty(),
                    "{name}: an explanation names no tensor: {e}"
                );
                let ev = e["evidence"].as_str().unwrap();
                assert!(!ev.is_empty() && !ev.contains("UNEXPLAINED"), "{name}: {e}");
                e["bytes"].as_i64().unwrap()
            })
            .sum();
        assert_eq!(
            peak as i64 - mt as i64,
            explained,
            "{name}: recorded {peak} B, MemTracker {mt} B, explained {explained} B"
        );
        report.push(format!(
            "{name}: recorded {peak} B, MemTracker {mt} B, explained {explained} B"
        ));
    }
    println!("{}", report.join("\n"));
}

#[test]
fn models_with_cudnn_say_what_a_cpu_trace_lacks() {
    for name in models() {
        let src = fs::read_to_string(root().join(format!("pytorch/models/{name}.py"))).unwrap();
        let j = json(&name);
        let notes: Vec<&str> = j["not_in_trace"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        // An RNN run as cuDNN's lists cuDNN's workspace and reserve as approximate.
        let approximate: Vec<String> = j["approximate"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{}: {}", a["kernel"], a["what"]))
            .collect();
        for (module, says) in [
            ("nn.Conv", "convolution workspaces"),
            ("nn.BatchNorm", "BatchNorm's reserve space"),
            ("nn.LSTM", "reserve space"),
            ("nn.GRU", "reserve space"),
        ] {
            if src.contains(module) {
                assert!(
                    notes.iter().any(|n| n.contains(says))
                        || approximate.iter().any(|n| n.contains(says)),
                    "{name}: {module} but {notes:?} and {approximate:?}"
                );
            }
        }
    }
}

#[test]
fn the_lessons_network_recorded_is_the_engines_step() {
    let mut checked = BTreeSet::new();
    for (name, optimizer) in [
        ("lesson_sgd", Optimizer::LESSON),
        (
            "lesson_adam",
            Optimizer::Adam {
                lr: 0.001,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
            },
        ),
    ] {
        let j = json(name);
        let batch = j["batch"].as_u64().unwrap();
        assert_eq!(j["steps"].as_u64(), Some(2));
        let config = MlpConfig {
            optimizer,
            ..MlpConfig::lesson(100)
        };
        let engine = measure_step(&planning_unlimited(), &config, batch, 0).unwrap();
        let s = snapshot(name);
        let (peak, _) = raw_peak(&s);
        // CUDA keeps non-fused Adam's step counters (and the 0-d tensor foreach adds to them)
        // on the CPU; the recording, on the CPU, has them (the JSON's cuda_delta lists them).
        let host: BTreeSet<usize> = j["cuda_delta"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| indices(&d["allocs"]))
            .collect();
        assert_eq!(host.is_empty(), name == "lesson_sgd", "{name}: {host:?}");
        let (gpu, _) = raw_peak_without(&s, &host);
        assert_eq!(
            engine.peak_requested,
            gpu,
            "{name}: the engine's peak_requested against the recorded {peak} B, {gpu} B without \
             the {} allocations CUDA keeps on the host",
            host.len()
        );
        checked.insert(name);
    }
    assert_eq!(checked.len(), 2);
}

fn lesson_fixtures() -> PathBuf {
    root().join("crates/memviz/tests/fixtures/lesson")
}

#[test]
fn the_lesson_fixtures_are_fresh() {
    let j: Value =
        serde_json::from_str(&fs::read_to_string(lesson_fixtures().join("lesson.json")).unwrap())
            .unwrap();
    let stale = changed_inputs(&j, "reference/pytorch/lesson_step.py", "the lesson");
    assert!(
        stale.is_empty(),
        "changed since the lesson's fixtures were recorded: {stale:?}\n\
         rerun: /work/venv-torch/bin/python reference/pytorch/record_lesson.py"
    );
    assert!(j["command"].as_str().unwrap().contains("record_lesson.py"));
}

#[test]
fn the_lesson_fixtures_are_the_engines_steps() {
    let j: Value =
        serde_json::from_str(&fs::read_to_string(lesson_fixtures().join("lesson.json")).unwrap())
            .unwrap();
    let files = j["files"].as_object().unwrap();
    assert_eq!(files.len(), 5);
    let mut report = Vec::new();
    for (name, f) in files {
        let o = &f["overrides"];
        let hidden = o["HIDDEN"].as_u64().unwrap();
        let layers = o["LAYERS"].as_u64().unwrap();
        let optimizer = match o["OPTIMIZER"].as_str().unwrap() {
            "sgd" => Optimizer::sgd(0.001),
            "adam" => Optimizer::adam(0.001),
            other => panic!("{name}: optimizer {other}"),
        };
        let batch = f["batch"].as_u64().unwrap();
        let s = Snapshot::read(&lesson_fixtures().join(name)).unwrap();
        assert!(s.problems().is_empty(), "{name}: {:?}", s.problems());
        let allocs = s.trace(0).iter().filter(|e| e.action == "alloc").count();
        assert_eq!(f["allocs"].as_u64(), Some(allocs as u64), "{name}: allocs");
        let (peak, _) = raw_peak(&s);
        assert_eq!(
            f["raw_peak_bytes"].as_u64(),
            Some(peak),
            "{name}: Python's count"
        );
        let host = indices(&f["cuda_host"]);
        assert_eq!(
            host.is_empty(),
            matches!(optimizer, Optimizer::Sgd { .. }),
            "{name}"
        );
        let (gpu, _) = raw_peak_without(&s, &host);
        let config = MlpConfig::lesson(hidden)
            .with_layers(layers)
            .with_optimizer(optimizer);
        let engine = measure_step(&planning_unlimited(), &config, batch, 0).unwrap();
        assert_eq!(
            engine.peak_requested,
            gpu,
            "{name}: the engine's peak_requested against the recorded {peak} B, {gpu} B \
             without the {} allocations CUDA keeps on the host",
            host.len()
        );
        report.push(format!(
            "{name}: recorded {peak} B, {gpu} B without {} host allocs, engine {} B",
            host.len(),
            engine.peak_requested
        ));
    }
    println!("{}", report.join("\n"));
}
