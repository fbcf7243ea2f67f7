//! Challenge 1 as PyTorch 2.11 ran it on an NVIDIA H200 held to the lesson's 15.90 GiB
//! (`reference/pytorch/gpu/2026-11-28-h200/part2/pytorch/challenge1_cuda.json`), and the
//! engine's demo told the same card: every expected figure is read from that record.
//!
//! `challenge1_cuda.py` holds the card with `torch.cuda.set_per_process_memory_fraction`, so
//! that its allocator may reserve 16 282 MiB; the CUDA context lies outside that allowance,
//! on the rest of the H200. On the engine that is the ideal card of the allowance (nothing
//! outside the allocator), or, literally, the whole card with `--memory-fraction`; both are
//! checked. What else the card does is PyTorch's version and the card's compute capability
//! (`--torch`, `--compute-capability`): the cuBLAS workspaces, which the ideal card leaves out.

use serde_json::Value;
use std::path::Path;

fn record() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../reference/pytorch/gpu/2026-11-28-h200/part2/pytorch/challenge1_cuda.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn int(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"))
}

/// `challenge1 --backend plan ARGS --json`, run from the demos' library.
fn challenge1(args: &[String]) -> Value {
    let mut all: Vec<String> = vec!["challenge1".into(), "--backend".into(), "plan".into()];
    all.extend(args.iter().cloned());
    all.push("--json".into());
    let (result, text) = cli::capture(|| demos::challenge1::run(all.clone()));
    result.unwrap_or_else(|e| panic!("{all:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{all:?}: {e}\n{text}"))
}

/// The engine's flags for the card the record names: its PyTorch and compute capability.
fn as_that_card(rec: &Value) -> Vec<String> {
    let env = &rec["environment"];
    let cc = &env["gpu_capability"];
    vec![
        "--torch".into(),
        env["torch_version"].as_str().unwrap().into(),
        "--compute-capability".into(),
        format!("{}.{}", cc[0], cc[1]),
    ]
}

/// The record's network is the demo's: same layers, optimizer, rows and steps.
fn same_setup(rec: &Value, engine: &Value) {
    let net = &rec["network"];
    let cfg = &engine["config"];
    for key in ["inputs", "hidden", "layers", "classes"] {
        assert_eq!(net[key], cfg[key], "network {key}");
    }
    assert_eq!(net["optimizer"], "SGD(lr=0.001, foreach=True)");
    assert_eq!(cfg["optimizer"]["name"], "sgd");
    assert_eq!(cfg["strategy"]["optimizer_impl"], "foreach");
    assert_eq!(
        rec["stages"]["attempt"]["rows"], engine["attempt"]["rows"],
        "the whole training set"
    );
    assert_eq!(rec["steps_per_attempt"], 2, "the engine's measure::STEPS");
    assert_eq!(
        rec["stages"]["warmup"]["steps"].as_array().unwrap().len() as u64,
        int(&engine["warmup"]["steps"], "warmup steps")
    );
}

#[test]
fn the_engine_told_the_cards_pytorch_finds_pytorchs_largest_batch() {
    let rec = record();
    let bisect = &rec["stages"]["bisect"];
    assert_eq!(
        bisect["exact"], true,
        "PyTorch's bisection found the boundary"
    );
    let largest = int(&bisect["largest_known_to_fit"], "largest_known_to_fit");
    assert_eq!(
        int(&bisect["smallest_known_not_to_fit"], "smallest"),
        largest + 1
    );
    let card = &rec["card"];
    let allowance = format!("{}B", int(&card["allowed_bytes"], "allowed_bytes"));
    let total = format!("{}B", int(&card["gpu_total_memory"], "gpu_total_memory"));
    let fraction = card["fraction"].as_f64().unwrap().to_string();
    let mut held = vec!["--device-memory".to_string(), allowance];
    held.extend(as_that_card(&rec));
    let mut literal = vec![
        "--device-memory".to_string(),
        total,
        "--memory-fraction".into(),
        fraction,
    ];
    literal.extend(as_that_card(&rec));
    for (form, args) in [("held", held), ("literal", literal)] {
        let e = challenge1(&args);
        same_setup(&rec, &e);
        assert_eq!(
            int(&e["largest_batch_that_fits"], "largest_batch_that_fits"),
            largest,
            "{form}: {args:?}"
        );
        // The warm-up steps at batch 32: the card's peaks, workspaces included.
        let steps = rec["stages"]["warmup"]["steps"].as_array().unwrap();
        for (ours, theirs) in [
            ("peak_allocated", "peak_allocated"),
            ("peak_reserved", "reserved"),
        ] {
            let card_max = steps.iter().map(|s| int(&s[theirs], theirs)).max();
            assert_eq!(
                Some(int(&e["warmup"][ours], ours)),
                card_max,
                "{form}: warm-up {ours}"
            );
        }
        // The whole training set: the same failure, byte for byte.
        let attempt = &rec["stages"]["attempt"];
        let m = &e["attempt"]["measured"];
        let oom = &m["oom"];
        let failed_in = m["failed_in"].as_str().unwrap();
        assert!(
            attempt["failed_in"]
                .as_str()
                .unwrap()
                .ends_with(&format!("step 1 {failed_in}")),
            "{form}: PyTorch failed in {}, the engine in {failed_in}",
            attempt["failed_in"]
        );
        assert_eq!(
            int(&oom["tried"], "tried"),
            int(&attempt["observer"]["alloc"], "observer.alloc"),
            "{form}: the segment tried"
        );
        for key in ["allocated", "reserved"] {
            assert_eq!(
                int(&oom[key], key),
                int(&attempt["at_catch"][key], key),
                "{form}: {key} at the failure"
            );
        }
    }
}

#[test]
fn the_ideal_cards_answer_is_the_claim_pytorch_refuted() {
    // The book's headline: the ideal card, all of it for tensors, no workspaces.
    let rec = record();
    let bisect = &rec["stages"]["bisect"];
    let claim = int(&bisect["engine_claim"], "engine_claim");
    let e = challenge1(&[]);
    same_setup(&rec, &e);
    assert_eq!(
        int(&e["largest_batch_that_fits"], "largest_batch_that_fits"),
        claim
    );
    assert_eq!(bisect["engine_claim_confirmed"], false);
    let tried = bisect["tries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["rows"] == claim)
        .expect("PyTorch tried the claim");
    assert_eq!(tried["fits"], false, "{tried}");
    assert!(claim > int(&bisect["largest_known_to_fit"], "largest"));
}
