//! The instructor's demo, run as a program: the timeline SVG against the recorded trace, the
//! leak against the fixed loop, the fragmentation and its remedies, help and bad input.

use cli::testing::{Demo, text};
use std::process::Output;

const DEMO: Demo = Demo(env!("CARGO_BIN_EXE_challenge3"));

fn run(args: &[&str]) -> Output {
    DEMO.run(args)
}

fn json(args: &[&str]) -> serde_json::Value {
    DEMO.json(args)
}

fn svg_path(name: &str) -> String {
    std::env::temp_dir()
        .join(format!("challenge3-test-{name}-{}.svg", std::process::id()))
        .to_string_lossy()
        .to_string()
}

/// The polyline of a series: the one in its colour with the most points.
fn series_points(doc: &roxmltree::Document<'_>, color: &str) -> Vec<(f64, f64)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(color))
        .map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').expect("x,y");
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect::<Vec<(f64, f64)>>()
        })
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

#[test]
fn the_timeline_is_valid_svg_drawn_from_the_trace() {
    let path = svg_path("train");
    let v = json(&["--backend", "cpu", "--out", &path]);
    assert_eq!(v["timeline"], path.as_str());
    let epochs = v["run"]["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 3);
    assert!(
        epochs.iter().all(|e| e["loss"].as_f64().is_some()),
        "kernels ran: {v}"
    );
    // Flat training: every epoch ends with the same allocated bytes.
    assert!(
        epochs
            .iter()
            .all(|e| e["allocated"] == epochs[0]["allocated"])
    );
    assert!(
        epochs
            .iter()
            .all(|e| e["reserved"].as_u64() >= e["allocated"].as_u64())
    );
    let svg = std::fs::read_to_string(&path).expect("the SVG was written");
    let doc = roxmltree::Document::parse(&svg).expect("the timeline is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let meta = doc
        .descendants()
        .find(|n| n.has_tag_name("metadata"))
        .and_then(|n| n.text())
        .expect("the chart says what it plotted");
    let meta: serde_json::Value = serde_json::from_str(meta).unwrap();
    // The plotted data is the recorded trace's.
    assert_eq!(meta["events"], v["events"]);
    assert!(v["events"].as_u64().unwrap() > 100);
    assert_eq!(meta["allocated"]["max"], v["trace_peak_allocated"]);
    assert_eq!(meta["reserved"]["max"], v["trace_peak_reserved"]);
    assert_eq!(meta["capacity"].as_u64(), Some(gpumem::lesson::CARD_BYTES));
    // Both series are drawn: a step chart has two points per plotted point, plus the end.
    let points = meta["points"].as_u64().unwrap() as usize;
    let reserved = series_points(&doc, "#E69F00");
    let allocated = series_points(&doc, "#0072B2");
    assert_eq!(reserved.len(), 2 * points + 1);
    assert_eq!(allocated.len(), 2 * points + 1);
    // Reserved is never below allocated (smaller y is higher on the page).
    assert!(
        reserved
            .iter()
            .zip(&allocated)
            .all(|(r, a)| r.1 <= a.1 + 0.5)
    );
    let t = text(&run(&["--backend", "cpu", "--out", &path]));
    assert!(
        t.contains("memory_summary() at the end") && t.contains("| GPU reserved memory"),
        "{t}"
    );
    assert!(t.contains(&path), "the path is printed: {t}");
    std::fs::remove_file(&path).ok();
}

#[test]
fn the_leak_runs_out_after_some_epochs_and_the_fix_stays_flat() {
    let path = svg_path("leak");
    let v = json(&["--scenario", "leak", "--out", &path]);
    let leaky = &v["leaky"];
    let fixed = &v["fixed"];
    let failure = &leaky["failure"];
    assert!(failure["epoch"].as_u64().unwrap() > 1, "{v}");
    assert!(leaky["epochs"].as_array().unwrap().len() >= 2);
    let peaks: Vec<u64> = leaky["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["peak_allocated"].as_u64().unwrap())
        .collect();
    assert!(peaks.windows(2).all(|w| w[1] > w[0]), "climbs: {peaks:?}");
    assert!(fixed["failure"].is_null(), "{v}");
    let fixed_peaks: Vec<u64> = fixed["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["peak_allocated"].as_u64().unwrap())
        .collect();
    assert_eq!(fixed_peaks.len() as u64, 8);
    assert!(
        fixed_peaks.iter().all(|&p| p == fixed_peaks[0]),
        "{fixed_peaks:?}"
    );
    let t = text(&run(&["--scenario", "leak", "--out", &path]));
    assert!(
        t.contains("-> out of memory in epoch") && t.contains("finished all 8 epochs"),
        "{t}"
    );
    std::fs::remove_file(&path).ok();
}

/// The split limit, expandable segments, no caching and an `empty_cache()` when the batch
/// size changes each finish the run; the garbage-collection threshold (with the memory
/// fraction it needs) does not: it gives back only whole unused segments, and when epoch 2
/// needs one more, none is unused.
#[test]
fn fragmentation_fails_with_memory_cached_and_the_remedies_outcomes() {
    let path = svg_path("frag");
    let v = json(&["--scenario", "fragmentation", "--out", &path]);
    assert_eq!(v["fragmented"], true, "{v}");
    let oom = &v["oom"];
    let (alloc, reserved, requested) = (
        oom["allocated"].as_u64().unwrap(),
        oom["reserved"].as_u64().unwrap(),
        oom["requested"].as_u64().unwrap(),
    );
    assert!(reserved - alloc > requested, "{oom}");
    assert_eq!(
        (&v["run"]["failure"]["epoch"], &v["run"]["failure"]["step"]),
        (&2.into(), &1.into()),
        "fails at the first step after the short batch: {v}"
    );
    let batches: Vec<u64> = v["run"]["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert!(batches[2] < batches[0], "a short last batch: {batches:?}");
    let attempts = v["attempts"].as_array().unwrap();
    let names: Vec<&str> = attempts
        .iter()
        .map(|a| a["remedy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "none (the run above)",
            "--max-split-size",
            "--expandable-segments",
            "--no-caching",
            "--gc-threshold --memory-fraction",
            "empty_cache() when the batch size changes"
        ]
    );
    let succeeded: Vec<bool> = attempts
        .iter()
        .map(|a| a["succeeded"].as_bool().unwrap())
        .collect();
    assert_eq!(succeeded, [false, true, true, true, false, true]);
    assert_eq!(
        attempts[4]["device_frees"], 0,
        "nothing to give back: {:?}",
        attempts[4]
    );
    for a in attempts {
        assert!(a["device_allocations"].as_u64().unwrap() > 0);
    }
    // Expandable segments map pages (each a device call) and unmap them on the retry.
    let e = &attempts[2];
    assert_eq!(e["maps"], e["device_allocations"], "{e}");
    assert!(e["unmaps"].as_u64().unwrap() > 0, "{e}");
    // Without a cache every tensor is a device call.
    let calls = |i: usize| attempts[i]["device_allocations"].as_u64().unwrap();
    assert!(calls(3) > 5 * calls(1), "{attempts:?}");
    let t = text(&run(&["--scenario", "fragmentation", "--out", &path]));
    assert!(t.contains("try max_split_size"), "the report's hint: {t}");
    assert!(t.contains("the cache is fragmented"), "{t}");
    assert!(t.contains("not a partition"), "{t}");
    assert!(t.contains("nothing to give back"), "{t}");
    assert!(t.contains("a call there is enough"), "{t}");
    // A remedy given on the command line makes the run itself succeed.
    let ok = json(&[
        "--scenario",
        "fragmentation",
        "--max-split-size",
        "20MiB",
        "--out",
        &path,
    ]);
    assert_eq!(ok["fragmented"], false, "{ok}");
    let grown = json(&[
        "--scenario",
        "fragmentation",
        "--expandable-segments",
        "--out",
        &path,
    ]);
    assert_eq!(grown["fragmented"], false, "{grown}");
    std::fs::remove_file(&path).ok();
}

#[test]
fn help_shows_the_defaults() {
    let t = text(&run(&["--help"]));
    assert!(
        t.contains("[default: train]") && t.contains("--max-split-size"),
        "{t}"
    );
    assert!(
        t.contains("--gc-threshold") && t.contains("--no-caching"),
        "{t}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let cases: &[(&[&str], &str)] = &[
        (&["--gc-threshold", "1.5"], "between 0 and 1"),
        (&["--max-split-size", "0"], "at least 20.00 MiB"),
        (&["--max-split-size", "16XB"], "`XB` is not a unit"),
        (&["--scenario", "oops"], "invalid value 'oops'"),
        (&["--epochs", "0"], "at least 1"),
        (
            &[
                "--device-memory",
                "native",
                "--gc-threshold",
                "0.8",
                "--backend",
                "cpu",
            ],
            "needs a known capacity",
        ),
    ];
    DEMO.assert_refuses(cases);
}
