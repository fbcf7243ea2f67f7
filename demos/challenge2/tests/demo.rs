//! The instructor's demo, run as a program: defaults, agreement with the memory equation
//! and across backings, JSON, help and bad input.

use cli::testing::{Demo, SHARED_REFUSALS, text};
use std::process::Output;

const DEMO: Demo = Demo(env!("CARGO_BIN_EXE_challenge2"));

fn run(args: &[&str]) -> Output {
    DEMO.run(args)
}

fn json(args: &[&str]) -> serde_json::Value {
    DEMO.json(args)
}

#[test]
fn the_default_depth_is_what_the_equation_predicts() {
    let v = json(&["--backend", "plan"]);
    let deepest = v["deepest_fit"].as_u64().unwrap();
    assert_eq!(Some(deepest), v["equation_predicts"].as_u64(), "{v}");
    assert!(
        deepest > 5,
        "the lesson's 5 layers fit easily on 15.90 GiB: {deepest}"
    );
    assert_eq!(v["first_failure"]["layers"].as_u64(), Some(deepest + 1));
    let t = text(&run(&["--backend", "plan"]));
    assert!(t.contains("out of memory. Tried to allocate"), "{t}");
    assert!(
        t.contains(&format!("predicts {deepest} hidden layers")),
        "{t}"
    );
    // The lesson's remark and the per-layer terms are asked for, not printed by default.
    let brief = "typically happens at about 5 hidden layers";
    assert!(!t.contains(brief), "{t}");
    let explained = text(&run(&["--backend", "plan", "--explain"]));
    assert!(explained.contains(brief), "{explained}");
}

/// At batch 32, Adam's update is the busiest moment: its state and the square roots of the
/// foreach update are as large as the parameters each.
#[test]
fn adam_runs_out_in_its_update() {
    let v = json(&["--backend", "plan", "--optimizer", "adam"]);
    let deepest = v["deepest_fit"].as_u64().unwrap();
    assert_eq!(Some(deepest), v["equation_predicts"].as_u64(), "{v}");
    assert_eq!(v["first_failure"]["failed_in"], "optimizer", "{v}");
    let sgd = json(&["--backend", "plan"]);
    let sgd_deepest = sgd["deepest_fit"].as_u64().unwrap();
    // SGD's peak holds two copies of the parameters, Adam's five.
    let ratio = sgd_deepest as f64 / deepest as f64;
    assert!((2.3..2.7).contains(&ratio), "{sgd_deepest} / {deepest}");
    let t = text(&run(&[
        "--backend",
        "plan",
        "--optimizer",
        "adam",
        "--explain",
    ]));
    assert!(
        t.contains("optimizer state +") && t.contains("temporaries +"),
        "{t}"
    );
}

#[test]
fn cpu_and_plan_agree_on_a_small_card() {
    let args = ["--device-memory", "64MiB", "--hidden", "512"];
    let plan = json(&[&args[..], &["--backend", "plan"]].concat());
    let cpu = json(&[&args[..], &["--backend", "cpu"]].concat());
    assert_eq!(plan["deepest_fit"], cpu["deepest_fit"]);
    assert_eq!(plan["equation_predicts"], cpu["deepest_fit"]);
    let peaks = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["measured"]["peak_allocated"].clone())
            .collect()
    };
    assert_eq!(
        peaks(&plan),
        peaks(&cpu),
        "every attempt allocates the same on both backings"
    );
    assert_eq!(cpu["attempts"][0]["measured"]["executed"], true);
}

#[test]
fn help_shows_the_defaults() {
    let t = text(&run(&["--help"]));
    assert!(
        t.contains("[default: 5000]") && t.contains("[default: 32]"),
        "{t}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    DEMO.assert_refuses(SHARED_REFUSALS);
    DEMO.assert_refuses(&[(
        &["--device-memory", "1MiB", "--backend", "plan"],
        "not even one hidden layer fits",
    )]);
}

/// `--memory-snapshot`: the shallowest depth that runs out, snapshotted at its out-of-memory
/// in PyTorch's format, the step's tensors named; an unwritable path is refused before the run.
#[test]
fn the_memory_snapshot_holds_the_failing_depth() {
    let path = std::env::temp_dir().join(format!("challenge2-{}.pickle", std::process::id()));
    let p = path.to_str().unwrap();
    let v = json(&["--backend", "plan", "--memory-snapshot", p]);
    assert_eq!(v["memory_snapshot"], p);
    let s = gpumem::snapshot::Snapshot::read(&path).expect("a snapshot");
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    let trace = &s.device_traces[0];
    let oom = trace.last().expect("a trace");
    assert_eq!(
        oom.action, "oom",
        "the snapshot is taken at the out-of-memory"
    );
    let layers = v["first_failure"]["layers"].as_u64().unwrap();
    let last = format!("layer{layers}.weight");
    let names: Vec<&str> = s
        .segments
        .iter()
        .flat_map(|g| &g.blocks)
        .filter_map(|b| gpumem::snapshot::frames_name(&b.frames))
        .collect();
    assert!(
        names.contains(&last.as_str()),
        "{last} is alive at the dump"
    );
    std::fs::remove_file(&path).ok();
    DEMO.assert_refuses(&[(
        &[
            "--backend",
            "plan",
            "--memory-snapshot",
            "/no/such/folder/s.pickle",
        ],
        "--memory-snapshot: cannot write",
    )]);
}
