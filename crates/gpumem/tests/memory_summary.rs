//! The engine's `memory_summary()` table against PyTorch's own: for each dictionary of the
//! committed fixture (the engine's statistics for small scenarios, and figures past PyTorch's
//! unit thresholds), `reference/pytorch/memory_summary.py` recorded what
//! `torch.cuda.memory_summary()` prints. With PyTorch's title, the engine's table must be the
//! same, line by line; with its own title, only the title line differs.

use gpumem::report::{PYTORCH_TITLE, from_pytorch_stats, summary_table};
use serde::Deserialize;
use std::collections::BTreeMap;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pytorch_memory_summary.json"
);

#[derive(Deserialize)]
struct Fixture {
    torch_version: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    abbreviated: bool,
    stats: BTreeMap<String, u64>,
    pytorch_summary: String,
}

fn fixture() -> Fixture {
    let text = std::fs::read_to_string(FIXTURE).expect("the fixture is committed");
    serde_json::from_str(&text).expect("the fixture is JSON in the script's format")
}

#[test]
fn the_table_is_pytorchs_line_by_line() {
    let f = fixture();
    assert!(f.torch_version.starts_with("2."), "{}", f.torch_version);
    assert!(f.cases.len() >= 4);
    for case in &f.cases {
        let stats = from_pytorch_stats(&case.stats).unwrap();
        let ours = summary_table(PYTORCH_TITLE, &stats, case.abbreviated);
        let theirs: Vec<&str> = case.pytorch_summary.lines().collect();
        let ours: Vec<&str> = ours.lines().collect();
        assert_eq!(ours.len(), theirs.len(), "{}: line count", case.name);
        for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(o, t, "{}: line {}", case.name, i + 1);
        }
    }
}

#[test]
fn the_engines_title_is_the_only_difference() {
    let f = fixture();
    let case = &f.cases[0];
    let stats = from_pytorch_stats(&case.stats).unwrap();
    let ours = summary_table(
        "gpumem memory summary, plan backing, device ID 0",
        &stats,
        false,
    );
    let differ: Vec<usize> = ours
        .lines()
        .zip(case.pytorch_summary.lines())
        .enumerate()
        .filter(|(_, (o, t))| o != t)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(differ, [1]);
    let title = ours.lines().nth(1).unwrap();
    assert_eq!(title.chars().count(), 77, "{title}");
}

#[test]
fn the_fixture_exercises_every_unit_and_count_prefix() {
    let all: String = fixture()
        .cases
        .iter()
        .map(|c| c.pytorch_summary.clone())
        .collect();
    for unit in [
        " B   |", " KiB |", " MiB |", " GiB |", " TiB |", " K  |", " M  |",
    ] {
        assert!(all.contains(unit), "no `{unit}` in the fixture");
    }
}
