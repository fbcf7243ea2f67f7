//! The recorder's fixtures (`crates/gpumem/tests/fixtures/recorded/`, recorded on a CPU for
//! compute capability 9.0) against the real H200's snapshots of the same nine steps
//! (`tests/fixtures/gpu/2026-11-28-h200/`, torch 2.11), allocation by allocation: the bytes
//! of every allocation the card made, in the card's order, are the recording's, except the
//! cuBLAS workspaces (the replay adds them), what the recording lists as `approximate` (the
//! card's frames name the kernel) and, in a recording that says CUDA differs in ways it does
//! not record (cuDNN's buffers in `not_in_trace`), the differences it says. Before the
//! recorder ran CUDA's kernels, five of the nine differed: dropout's mask (float32 on the CPU,
//! bool on CUDA), the attention kernel, the CPU's RNN cells against one cuDNN call,
//! autocast's CPU op lists, a linear's bias and the gradients added out of place, the model's
//! parameters made in another order.

use gpumem::snapshot::{Recorded, Snapshot, TraceEntry};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> Snapshot {
    Snapshot::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The frames' names, joined: what the card's C++ stack says made an allocation.
fn stack(e: &TraceEntry) -> String {
    e.frames
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn is_workspace(e: &TraceEntry) -> bool {
    let s = stack(e);
    s.contains("getCurrentCUDABlasHandle") || s.contains("getCUDABlasLtWorkspace")
}

/// The card's allocations (bytes, stack), the cuBLAS workspaces left out.
fn card_allocs(s: &Snapshot) -> Vec<(i64, String)> {
    s.device_traces[0]
        .iter()
        .filter(|e| e.action == "alloc" && !is_workspace(e))
        .map(|e| (e.size, stack(e)))
        .collect()
}

/// The recording's allocations on the GPU: those CUDA keeps on the host left out.
fn recorded_allocs(s: &Snapshot, r: &Recorded) -> Vec<i64> {
    s.device_traces[0]
        .iter()
        .filter(|e| e.action == "alloc")
        .enumerate()
        .filter(|(i, _)| !r.cuda_host.contains(i))
        .map(|(_, e)| e.size)
        .collect()
}

/// Bytes → count in `a` beyond `b`.
fn beyond(a: &[i64], b: &[i64]) -> BTreeMap<i64, i64> {
    let mut m = BTreeMap::new();
    for x in a {
        *m.entry(*x).or_insert(0) += 1;
    }
    for x in b {
        *m.entry(*x).or_insert(0) -= 1;
    }
    m.retain(|_, n| *n > 0);
    m
}

#[test]
fn each_recording_holds_the_cards_allocations_or_says_why_not() {
    let gpu = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu/2026-11-28-h200");
    let recorded = root().join("crates/gpumem/tests/fixtures/recorded");
    let mut report = Vec::new();
    let (mut names, mut exact) = (0, 0);
    for entry in std::fs::read_dir(&recorded).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".pickle") else {
            continue;
        };
        if !gpu.join(&file).exists() {
            continue; // a model the card has not run yet
        }
        names += 1;
        let rs = read(&recorded.join(&file));
        let r = rs.recorder.clone().expect("a recording");
        let card = read(&gpu.join(&file));
        let theirs = card_allocs(&card);
        let ours = recorded_allocs(&rs, &r);
        // What the card made beyond the recording, in a kernel the recording lists as
        // approximate: the kernel's own scratch.
        let sizes: Vec<i64> = theirs.iter().map(|(b, _)| *b).collect();
        let mut excess = beyond(&sizes, &ours);
        let (mut approx, mut rest) = (Vec::new(), Vec::new());
        for (b, s) in &theirs {
            let left = excess.get(b).copied().unwrap_or(0);
            if left > 0 && r.approximate.iter().any(|a| s.contains(&a.kernel)) {
                excess.insert(*b, left - 1);
                approx.push(*b);
            } else {
                rest.push(*b);
            }
        }
        let theirs = rest;
        let says_a_gap = !r.not_in_trace.is_empty();
        let (only_card, only_rec) = (beyond(&theirs, &ours), beyond(&ours, &theirs));
        let approx_bytes: i64 = approx.iter().sum();
        report.push(format!(
            "{name}: card {} allocations, recording {}; approximate {} ({approx_bytes} B); \
             only on the card {only_card:?}; only recorded {only_rec:?}",
            theirs.len() + approx.len(),
            ours.len(),
            approx.len(),
        ));
        let equal = ours == theirs;
        assert!(
            equal || says_a_gap,
            "{name}: the recording's allocations are not the card's, in the card's order"
        );
        exact += usize::from(equal);
    }
    println!("{}", report.join("\n"));
    assert_eq!(names, 9, "the recorder's nine models");
    assert!(exact >= 9, "{exact} recordings hold the card's allocations");
}
