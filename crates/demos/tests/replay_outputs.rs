//! Every variant `scripts/outputs` runs, its `--memory-snapshot` replayed by `memviz replay`
//! on the demo's own card: the replay's peaks are the demo's, to the byte, on every backing.
//! The variants are read from the script itself, so the two lists cannot drift apart.

use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `name|args` lines of the script's `variants=( … )` and its `small=( … )` arguments.
fn variants() -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let script = std::fs::read_to_string(root().join("scripts/outputs")).unwrap();
    let small_line = script
        .lines()
        .find(|l| l.starts_with("small=("))
        .expect("scripts/outputs has small=(…)");
    let small = small_line
        .trim_start_matches("small=(")
        .trim_end_matches(')')
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let start = script.find("variants=(").unwrap();
    let end = start + script[start..].find("\n)").unwrap();
    let list = script[start..end]
        .lines()
        .skip(1)
        .map(|l| l.trim().trim_matches('"'))
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, args) = l.split_once('|').unwrap();
            (
                name.to_string(),
                args.split_whitespace().map(str::to_string).collect(),
            )
        })
        .collect();
    (small, list)
}

fn demo(run: fn(Vec<String>) -> anyhow::Result<()>, args: Vec<String>) -> Value {
    let (result, text) = cli::capture(|| run(args.clone()));
    result.unwrap_or_else(|e| panic!("{args:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}\n{text}"))
}

fn replay(path: &Path, card: &str) -> Value {
    let text = memviz::run([
        "memviz",
        "replay",
        path.to_str().unwrap(),
        "--card",
        card,
        "--json",
    ])
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn c1(args: Vec<String>) -> anyhow::Result<()> {
    demos::challenge1::run(args)
}

fn c4(args: Vec<String>) -> anyhow::Result<()> {
    demos::challenge4::run(args)
}

fn backends() -> Vec<&'static str> {
    let mut b = vec!["plan", "cpu"];
    if gpumem::testing::gpu().is_some() {
        b.push("wgpu");
    }
    b
}

#[test]
fn every_challenge1_variant_replays_to_its_own_peaks() {
    let dir = std::env::temp_dir().join(format!("replay-outputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (small, variants) = variants();
    assert!(variants.len() >= 9, "{variants:?}");
    let mut checked = 0;
    for backend in backends() {
        for (name, extra) in &variants {
            let snap = dir.join(format!("c1-{backend}-{name}.pickle"));
            let mut args: Vec<String> =
                vec!["challenge1".into(), "--backend".into(), backend.into()];
            args.extend(small.iter().cloned());
            args.extend(extra.iter().cloned());
            args.extend([
                "--json".into(),
                "--memory-snapshot".into(),
                snap.display().to_string(),
            ]);
            let d = demo(c1, args);
            let card = if extra.iter().any(|a| a == "lesson") {
                "lesson"
            } else {
                "ideal"
            };
            let r = replay(&snap, card);
            let m = &d["attempt"]["measured"];
            for key in ["peak_allocated", "peak_reserved"] {
                assert_eq!(r[key], m[key], "c1 {backend} {name}: {key}");
            }
            assert_eq!(
                r["fits"],
                Value::Bool(m["oom"].is_null()),
                "c1 {backend} {name}: fits"
            );
            checked += 1;
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(checked >= 18);
}

#[test]
fn challenge4s_snapshots_replay_to_its_planned_peaks() {
    let dir = std::env::temp_dir().join(format!("replay-outputs-c4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (small, _) = variants();
    for backend in backends() {
        for p in ["float32", "float64"] {
            let snap = dir.join(format!("c4-{backend}-{p}.pickle"));
            let mut args: Vec<String> =
                vec!["challenge4".into(), "--backend".into(), backend.into()];
            args.extend(small.iter().cloned());
            for a in [
                "--batch",
                "256",
                "--layers",
                "4",
                "--precision",
                p,
                "--checkpoint",
                "2",
                "--accumulation",
                "2",
                "--time-samples",
                "512",
                "--json",
                "--memory-snapshot",
            ] {
                args.push(a.into());
            }
            args.push(snap.display().to_string());
            let d = demo(c4, args);
            let r = replay(&snap, "ideal");
            // The snapshot is the setup as given with no strategy on: the network in float32
            // (`--precision` and the strategies are what the demo compares, not the setup).
            assert_eq!(
                r["peak_allocated"], d["float32_vs_float64"]["float32"]["planned_peak"],
                "c4 {backend} {p}"
            );
            assert_eq!(r["fits"], Value::Bool(true));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
