//! memviz on snapshots of a real run's shape, made by `memviz::synthetic` (small enough for a
//! debug build): consistent figures, the bounded drawing, the views, and a large file cut
//! short. The benchmark (`examples/scale.rs`) measures the full size.

mod common;

use common::{TempFile, temp};
use memviz::synthetic::{self, Shape};

fn run(args: &[&str]) -> anyhow::Result<String> {
    memviz::run(std::iter::once("memviz").chain(args.iter().copied()))
}

const SHAPE: Shape = Shape {
    events: 60_000,
    leaked: 3_000,
    transient: 100,
    stacks: 50,
    seed: 7,
};

fn made(name: &str) -> (TempFile, synthetic::Made) {
    let path = temp(name);
    let made = synthetic::write(&path, &SHAPE).expect("writes");
    (path, made)
}

#[test]
fn a_large_snapshot_is_drawn_within_its_bound_and_says_what_it_left_out() {
    let (path, made) = made("large.pickle");
    let svg = temp("large.svg");
    let p = path.to_str().unwrap();
    let out = run(&[
        p,
        "--svg",
        svg.to_str().unwrap(),
        "--max-shapes",
        "500",
        "--json",
    ])
    .expect("reads");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let d = &json["devices"][0];
    assert_eq!(d["events"], made.events as u64);
    assert_eq!(json["problems"].as_array().map(Vec::len), Some(0));
    let tl = &json["timeline"];
    assert_eq!(tl["bands"], 499, "500 shapes, one the summary: {tl}");
    let alive = tl["alive"].as_u64().unwrap();
    assert_eq!(tl["summarised"].as_u64().unwrap(), alive - 499);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains("more tensors, summarised"),
        "the legend says so"
    );
    assert!(drawn.contains(&format!("499 of {alive} tensors drawn")));
    assert!(drawn.contains("\"summarised\":"), "and the metadata");
    // The peak's tensors: as many as the generator left alive at most, largest first.
    let peak = &json["peak"];
    let sizes: Vec<u64> = peak["largest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["bytes"].as_u64().unwrap())
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    assert!(
        peak["largest"][0]["frames"].as_array().unwrap().len() >= 8,
        "whole stacks"
    );
    assert_eq!(peak["requested"], d["peak_requested"]);
    // The segment view at the dump holds exactly the tensors the trace leaves alive.
    let blocks: usize = json["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["blocks"].as_array().unwrap().len())
        .sum();
    assert_eq!(blocks, made.live);
}

#[test]
fn the_segment_view_replays_the_trace_back() {
    let (path, _) = made("replay.pickle");
    let p = path.to_str().unwrap();
    let at = |n: &str| -> serde_json::Value {
        serde_json::from_str(&run(&[p, "--json", "--segments-at", n]).unwrap()).unwrap()
    };
    let count = |v: &serde_json::Value| v["segments"].as_array().unwrap().len();
    assert_eq!(count(&at("0")), 0, "no segment before the first entry");
    let early = at("1000");
    let late = at("50000");
    assert!(count(&early) > 0 && count(&early) < count(&late));
    let text = run(&[p, "--segments-at", "1000"]).unwrap();
    assert!(text.contains("segments after entry 1000"), "{text}");
    assert!(text.contains("at the peak (after entry"), "{text}");
}

#[test]
fn a_large_snapshot_cut_short_is_a_clear_error() {
    let (path, _) = made("cut.pickle");
    let whole = std::fs::read(&path).unwrap();
    for keep in [whole.len() / 3, whole.len() - 1] {
        let cut = temp(&format!("cut-{keep}.pickle"));
        std::fs::write(&cut, &whole[..keep]).unwrap();
        let e = run(&[cut.to_str().unwrap()]).expect_err("refused");
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}

#[test]
fn a_window_outside_the_trace_is_refused() {
    let (path, made) = made("window.pickle");
    let p = path.to_str().unwrap();
    let past = (made.events + 1).to_string();
    let e = run(&[p, "--to", &past]).expect_err("past the end");
    assert!(e.to_string().contains("not within the trace"), "{e}");
    let e = run(&[p, "--from", "10", "--to", "5"]).expect_err("backwards");
    assert!(e.to_string().contains("--from 10 --to 5"), "{e}");
    let e = run(&[p, "--segments-at", &past]).expect_err("past the end");
    assert!(e.to_string().contains("past the trace"), "{e}");
    let ok = run(&[p, "--from", "1000", "--to", "2000", "--json"]).unwrap();
    let json: serde_json::Value = serde_json::from_str(&ok).unwrap();
    let at = json["peak"]["after_entries"].as_u64().unwrap();
    assert!(
        (1000..=2000).contains(&at),
        "the peak within the window: {at}"
    );
}
