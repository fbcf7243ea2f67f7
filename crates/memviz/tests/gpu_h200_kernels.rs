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

use gpumem::snapshot::Snapshot;
use memviz::against::against;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> Snapshot {
    Snapshot::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn each_recording_holds_the_cards_allocations_or_says_why_not() {
    let gpu = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu/2026-11-28-h200");
    let recorded = root().join("crates/gpumem/tests/fixtures/recorded");
    let mut report = Vec::new();
    let (mut names, mut exact) = (0, 0);
    let (mut card_scratch, mut measured) = (std::collections::BTreeSet::new(), Vec::new());
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
        let cmp = against(&rs, &r, &card);
        let approx_bytes: i64 = cmp.approximate.iter().sum();
        card_scratch.extend(cmp.approximate.iter().copied());
        measured.extend(r.approximate.iter().filter_map(|a| a.measured.clone()));
        report.push(format!(
            "{name}: card {} allocations, recording {}; approximate {} ({approx_bytes} B); \
             only on the card {:?}; only recorded {:?}",
            cmp.card.len() + cmp.approximate.len(),
            cmp.recorded.len(),
            cmp.approximate.len(),
            cmp.only_card,
            cmp.only_recorded,
        ));
        let says_a_gap = !r.not_in_trace.is_empty();
        let equal = cmp.same_order();
        assert!(
            equal || says_a_gap,
            "{name}: the recording's allocations are not the card's, in the card's order"
        );
        exact += usize::from(equal);
    }
    println!("{}", report.join("\n"));
    assert_eq!(names, 9, "the recorder's nine models");
    assert!(exact >= 9, "{exact} recordings hold the card's allocations");
    // The bytes the recorder's `approximate` entries quote as measured are the card's own
    // scratch allocations, read from its snapshots here (none typed without a check).
    assert!(!measured.is_empty());
    for text in &measured {
        let quoted: Vec<i64> = text
            .split(|c: char| !c.is_ascii_digit() && c != ',')
            .map(|w| w.replace(',', ""))
            .filter_map(|w| w.parse().ok())
            .filter(|&n: &i64| n >= 1000)
            .collect();
        assert!(!quoted.is_empty(), "{text}");
        for n in quoted {
            assert!(
                card_scratch.contains(&n),
                "{n} B quoted as measured is no scratch allocation of the card's: {text}"
            );
        }
    }
}
