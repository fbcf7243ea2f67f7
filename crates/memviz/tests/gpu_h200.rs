//! `memviz replay` of real snapshots, taken by PyTorch 2.11 on an NVIDIA H200
//! (`reference/pytorch/gpu/2026-11-28-h200/`), against what the card itself reported in the
//! same run. Every expected figure is read from the committed PyTorch output; none is typed
//! here. The snapshots are in `tests/fixtures/gpu/2026-11-28-h200/`.
//!
//! - The recorder's nine models, run for real (`real_step.py`): replayed on their card, the
//!   peaks and the end state are the card's `max_memory_allocated`, `max_memory_reserved`,
//!   `memory_allocated` and `memory_reserved`, to the byte. The recorder's CPU recordings of
//!   the same steps (`crates/gpumem/tests/fixtures/recorded/`), replayed as that card, give
//!   the same peaks wherever the recording states no memory it could not record.
//! - Challenge 1 on the card held to the lesson's 15.90 GiB (`challenge1_cuda.py`): the
//!   batches that ran out (the whole training set, 655 360 and 531 629 rows) run out in the
//!   replay at the same request, with the same reserved bytes and the same figures in
//!   PyTorch's message; 531 628 rows fit, with the card's peaks.

use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The run's records (PyTorch's output).
fn evidence(rel: &str) -> PathBuf {
    root()
        .join("reference/pytorch/gpu/2026-11-28-h200")
        .join(rel)
}

/// The run's snapshots.
fn snapshot(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gpu/2026-11-28-h200")
        .join(name)
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn replay(path: &Path, args: &[&str]) -> Value {
    let mut all = vec!["memviz", "replay", path.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let text = memviz::run(all).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn int(v: &Value, what: &str) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"))
}

#[test]
fn each_real_step_replays_to_the_cards_own_peaks() {
    let mut names: Vec<String> = std::fs::read_dir(evidence("part5"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".json")?;
            (!stem.ends_with(".replay")).then(|| stem.to_string())
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 9, "the recorder's nine models: {names:?}");
    for name in &names {
        let card = json(&evidence(&format!("part5/{name}.json")));
        assert_eq!(card["device"], "cuda", "{name}");
        let pickle = card["snapshot"].as_str().unwrap();
        let capacity = int(&card["total_memory"], "total_memory").to_string();
        let r = replay(&snapshot(pickle), &["--card", &capacity]);
        assert_eq!(r["kind"], "gpu", "{name}: a GPU's own trace");
        assert_eq!(r["fits"], true, "{name}");
        for (ours, theirs) in [
            ("peak_allocated", "max_memory_allocated"),
            ("peak_reserved", "max_memory_reserved"),
        ] {
            assert_eq!(
                int(&r[ours], ours),
                int(&card[theirs], theirs),
                "{name}: replay's {ours} against the card's {theirs}"
            );
        }
        for (ours, theirs) in [
            ("allocated", "memory_allocated_end"),
            ("reserved", "memory_reserved_end"),
        ] {
            assert_eq!(
                int(&r["end"][ours], ours),
                int(&card[theirs], theirs),
                "{name}: replay's end {ours} against the card's {theirs}"
            );
        }
        assert_eq!(
            int(&r["trace_entries"], "trace_entries"),
            int(&card["trace_entries"], "trace_entries"),
            "{name}"
        );
    }
}

#[test]
fn the_recorders_cpu_recordings_replay_as_the_card_to_its_peaks() {
    // The recorder's committed fixtures of the same nine steps, recorded on a CPU without a
    // GPU, replayed as the card: its capacity, PyTorch and compute capability (the replay
    // adds the cuBLAS workspaces that version takes). Where the recording states no memory a
    // recording lacks (cuDNN's buffers in `not_in_trace`, a kernel's scratch in
    // `approximate`), it gives the card's peaks to the byte; nowhere is it above them.
    let recorded = root().join("crates/gpumem/tests/fixtures/recorded");
    let mut exact = 0;
    let mut names = 0;
    for entry in std::fs::read_dir(evidence("part5")).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".json") else {
            continue;
        };
        if name.ends_with(".replay") {
            continue;
        }
        names += 1;
        let card = json(&evidence(&format!("part5/{file}")));
        let fixture = recorded.join(format!("{name}.pickle"));
        let rec = gpumem::snapshot::Snapshot::read(&fixture)
            .unwrap()
            .recorder
            .unwrap_or_else(|| panic!("{name}: not a recording"));
        assert_eq!(card["batch"], rec.batch, "{name}: the same batch");
        assert_eq!(card["steps"], rec.steps, "{name}: the same steps");
        let capacity = int(&card["total_memory"], "total_memory").to_string();
        let r = replay(
            &fixture,
            &[
                "--card",
                &capacity,
                "--torch",
                card["torch"].as_str().unwrap(),
                "--compute-capability",
                card["compute_capability"].as_str().unwrap(),
            ],
        );
        let states_a_gap = !rec.not_in_trace.is_empty() || !rec.approximate.is_empty();
        let mut equal = true;
        for (ours, theirs) in [
            ("peak_allocated", "max_memory_allocated"),
            ("peak_reserved", "max_memory_reserved"),
        ] {
            let (ours_v, theirs_v) = (int(&r[ours], ours), int(&card[theirs], theirs));
            assert!(
                ours_v <= theirs_v,
                "{name}: {ours} {ours_v} above {theirs_v}"
            );
            if !states_a_gap {
                assert_eq!(
                    ours_v, theirs_v,
                    "{name}: {ours} against the card's {theirs}"
                );
            }
            equal &= ours_v == theirs_v;
        }
        exact += usize::from(equal);
    }
    assert_eq!(names, 9);
    assert!(exact >= 6, "{exact} recordings held to the byte");
}

/// The figures two out-of-memory messages must share: the request, what is allocated, what
/// is reserved but unallocated, and the allowance of a held card, as each message words them.
fn message_figures(message: &str) -> Vec<String> {
    let between = |from: &str, to: &str| -> String {
        let start = message
            .find(from)
            .unwrap_or_else(|| panic!("no {from:?} in {message}"))
            + from.len();
        let len = message[start..]
            .find(to)
            .unwrap_or_else(|| panic!("no {to:?} after {from:?} in {message}"));
        message[start..start + len].to_string()
    };
    let mut out = vec![
        between("Tried to allocate ", ". "),
        between("Of the allocated memory ", " is allocated by PyTorch"),
        between(
            "is allocated by PyTorch, and ",
            " is reserved by PyTorch but unallocated",
        ),
    ];
    if message.contains(" allowed;") {
        out.push(between("memory in use. ", " allowed;"));
    }
    out
}

/// One of the run's Challenge 1 attempts: its snapshot and PyTorch's record of it.
struct Attempt {
    rows: i64,
    pickle: PathBuf,
    record: Value,
}

fn attempts() -> Vec<Attempt> {
    let full = json(&evidence("part2/pytorch/challenge1_cuda.json"));
    let mut out = vec![Attempt {
        rows: int(&full["stages"]["attempt"]["rows"], "rows"),
        pickle: snapshot("challenge1_r1173000.pickle"),
        record: full,
    }];
    for rows in [655_360, 531_628, 531_629] {
        let record = json(&evidence(&format!(
            "challenge1-fresh/r{rows}/challenge1_cuda.json"
        )));
        assert_eq!(int(&record["stages"]["attempt"]["rows"], "rows"), rows);
        out.push(Attempt {
            rows,
            pickle: snapshot(&format!("challenge1_r{rows}.pickle")),
            record,
        });
    }
    assert_eq!(out[0].rows, 1_173_000, "the whole training set");
    out
}

#[test]
fn challenge_1_on_the_held_card_replays_to_pytorchs_own_failure() {
    for a in attempts() {
        let rec = &a.record;
        let attempt = &rec["stages"]["attempt"];
        let card = &rec["card"];
        let torch = rec["environment"]["torch_version"].as_str().unwrap();
        // The card as the script held it: its allowance, all of it for the allocator (the
        // CUDA context lies outside it, on the rest of the H200) ...
        let allowance = int(&card["allowed_bytes"], "allowed_bytes").to_string();
        // ... and literally: the whole card and torch.cuda.set_per_process_memory_fraction.
        let total = int(&card["gpu_total_memory"], "gpu_total_memory").to_string();
        let fraction = card["fraction"].as_f64().unwrap().to_string();
        let held = replay(&a.pickle, &["--card", &allowance, "--torch", torch]);
        let literal = replay(
            &a.pickle,
            &[
                "--card",
                &total,
                "--memory-fraction",
                &fraction,
                "--torch",
                torch,
            ],
        );
        let rows = a.rows;
        for (form, r) in [("held", &held), ("literal", &literal)] {
            assert_eq!(r["fits"], attempt["fits"], "{rows} rows ({form}): fits");
            if attempt["fits"] == true {
                let after = &attempt["after"];
                assert_eq!(
                    int(&r["peak_allocated"], "peak_allocated"),
                    int(&after["max_allocated"], "max_allocated"),
                    "{rows} rows ({form})"
                );
                assert_eq!(
                    int(&r["peak_reserved"], "peak_reserved"),
                    int(&after["max_reserved"], "max_reserved"),
                    "{rows} rows ({form})"
                );
                continue;
            }
            let f = &r["failure"];
            let at_catch = &attempt["at_catch"];
            // The segment PyTorch's out-of-memory observer saw it try to take from the
            // device, and what the allocator held.
            assert_eq!(
                int(&f["tried"], "tried"),
                int(&attempt["observer"]["alloc"], "observer.alloc"),
                "{rows} rows ({form}): the segment tried"
            );
            assert_eq!(
                int(&f["reserved"], "reserved"),
                int(&at_catch["reserved"], "at_catch.reserved"),
                "{rows} rows ({form}): reserved at the failure"
            );
            assert_eq!(
                int(&r["peak_allocated"], "peak_allocated"),
                int(&at_catch["max_allocated"], "at_catch.max_allocated"),
                "{rows} rows ({form}): max_memory_allocated"
            );
            assert_eq!(
                int(&r["peak_reserved"], "peak_reserved"),
                int(&at_catch["max_reserved"], "at_catch.max_reserved"),
                "{rows} rows ({form}): max_memory_reserved"
            );
            let theirs = message_figures(attempt["oom_message"].as_str().unwrap());
            let ours = message_figures(f["message"].as_str().unwrap());
            match form {
                // The held card has no fraction: its message has no "allowed".
                "held" => assert_eq!(ours[..], theirs[..3], "{rows} rows ({form})"),
                _ => assert_eq!(ours, theirs, "{rows} rows ({form})"),
            }
        }
    }
}

#[test]
fn the_measured_context_is_the_records() {
    // The context the replay names when it assumes none: the H200's memory taken before any
    // tensor, total − free from `torch.cuda.mem_get_info()` at the probe's start.
    let probe = json(&evidence("part2/pytorch_probe/challenge1_cuda.json"));
    let env = &probe["environment"];
    let info = env["mem_get_info"].as_array().unwrap();
    let (free, total) = (int(&info[0], "free"), int(&info[1], "total"));
    let m = gpumem::versions::MEASURED_CONTEXT;
    assert_eq!(m.bytes as i64, total - free);
    assert_eq!(env["gpu_name"], m.card);
    let torch = env["torch_version"].as_str().unwrap();
    assert!(torch.starts_with(&format!("{}.", m.torch)), "{torch}");
}

#[test]
fn the_measured_workspaces_are_the_runs() {
    // The workspace rules the replay calls measured: the row the run's PyTorch takes, at the
    // run's compute capability, on the run's card. With them the recordings replay to the
    // card's own peaks (the_recorders_cpu_recordings_replay_as_the_card_to_its_peaks).
    let run = json(&evidence("part5/lesson_sgd.json"));
    let torch: gpumem::versions::TorchVersion = run["torch"]
        .as_str()
        .unwrap()
        .split('+')
        .next()
        .unwrap()
        .rsplit_once('.')
        .map(|(mm, _)| mm)
        .unwrap()
        .parse()
        .unwrap();
    let cc: gpumem::versions::ComputeCapability =
        run["compute_capability"].as_str().unwrap().parse().unwrap();
    let m = gpumem::versions::Rules::of(torch)
        .measured_on(cc)
        .expect("the run's rules are marked measured");
    assert_eq!(run["device_name"], m.card);
    assert_eq!(torch.to_string(), m.torch);
    // Nothing else is marked measured: no other card ran.
    assert_eq!(gpumem::versions::MEASURED_WORKSPACES.len(), 1);
}
