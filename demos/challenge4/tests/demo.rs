//! The instructor's demo, run as a program: defaults, JSON, the strategies' numbers, help and
//! bad input.

use cli::testing::{Demo, SHARED_REFUSALS, assert_refused, text};
use gpumem::size::format_bytes;
use serde_json::Value;
use std::process::Output;

const DEMO: Demo = Demo(env!("CARGO_BIN_EXE_challenge4"));

fn run(args: &[&str]) -> Output {
    DEMO.run(args)
}

fn json(args: &[&str]) -> serde_json::Value {
    DEMO.json(args)
}

fn row<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no row `{name}`"))
}

#[test]
fn defaults_try_every_strategy_and_end_with_the_cheapest() {
    // The figures come from the planned JSON; the text (timed on cpu) must print them.
    let v = json(&["--backend", "plan"]);
    let k = v["cheapest_float32"]["strategy"]["accumulation"]
        .as_u64()
        .unwrap();
    let gib = |value: &Value| format_bytes(value.as_u64().unwrap());
    let floats = &v["float32_vs_float64"];
    let here = &v["mixed_precision"]["this_setup"];
    let o = run(&["--backend", "cpu"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for part in [
        "batch:   1173000 rows (the whole training set)".to_string(),
        "none (float32)".into(),
        "float64".into(),
        "mixed precision".into(),
        format!("accumulation ×{k}"),
        "checkpointing, segments of".into(),
        "all three".into(),
        // Challenge 1's out-of-memory, reproduced.
        "tried to allocate 8.74 GiB for `a0`".into(),
        // Time measured on a named backing and sample.
        "executed on cpu: 256 rows, 1 epoch".into(),
        format!(
            "→ mixed precision, 1 micro-batch of 1173000 rows, no checkpointing: peak {}",
            gib(&v["cheapest"]["peak_allocated"])
        ),
        format!(
            "Keeping float32 (the plain step's numbers): float32, {k} micro-batches of {} rows",
            1_173_000u64.div_ceil(k)
        ),
        "\"Cheapest\": the fewest micro-batches per update".into(),
        // The sources' claims, measured.
        format!(
            "float64 needs {} where float32 needs {} (×2.00)",
            gib(&floats["float64"]["planned_peak"]),
            gib(&floats["float32"]["planned_peak"])
        ),
        format!(
            "holds on this setup: {} → {}",
            gib(&here["float32"]["planned_peak"]),
            gib(&here["mixed"]["planned_peak"])
        ),
        "8-byte integers (int64)".into(),
        "On Challenge 2's network (5 hidden layers of 5000, Adam, batch 32)".into(),
        "the same update".into(),
    ] {
        assert!(t.contains(&part), "`{part}` missing:\n{t}");
    }
}

/// The accumulating row uses the fewest micro-batches with which float32 fits: one fewer
/// runs out of memory on the card.
#[test]
fn accumulation_uses_the_fewest_micro_batches_that_fit() {
    let v = json(&["--backend", "plan"]);
    let k = v["cheapest_float32"]["strategy"]["accumulation"]
        .as_u64()
        .unwrap();
    assert!(k >= 2, "the full batch does not fit at once: {k}");
    let acc = row(&v, "accumulation ×");
    assert_eq!(acc["micro_batches"].as_u64(), Some(k));
    assert_eq!(acc["fits"], true);
    let fewer = json(&["--backend", "plan", "--accumulation", &(k - 1).to_string()]);
    let fewer = row(&fewer, &format!("accumulation ×{}", k - 1));
    assert_eq!(fewer["fits"], false, "{fewer}");
    assert!(fewer["out_of_memory"].as_str().is_some(), "{fewer}");
}

/// The strategies executed on a small setup learn the synthetic task like the plain run:
/// accumulation and checkpointing to within 0.001 of its validation loss (the same update),
/// float64 and mixed precision to within 2 points of its accuracy.
#[test]
fn strategies_learn_like_the_plain_run() {
    let v = json(&[
        "--backend",
        "cpu",
        "--hidden",
        "16",
        "--layers",
        "3",
        "--samples",
        "3000",
        "--time-samples",
        "3000",
        "--batch",
        "64",
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--time-epochs",
        "3",
        "--accumulation",
        "4",
    ]);
    let result = |r: &Value| {
        let t = &r["timing"];
        (
            t["validation_loss"].as_f64().unwrap(),
            t["validation_accuracy"].as_f64().unwrap(),
        )
    };
    let rows = v["rows"].as_array().unwrap();
    let (loss, accuracy) = result(&rows[0]);
    assert!(accuracy > 0.7, "the plain run learns: {accuracy}");
    for r in &rows[1..] {
        let name = r["name"].as_str().unwrap();
        let (l, a) = result(r);
        assert!((a - accuracy).abs() <= 0.02, "{name}: {a} vs {accuracy}");
        if r["strategy"]["precision"] == "float32" {
            assert!((l - loss).abs() <= 1e-3, "{name}: loss {l} vs {loss}");
        }
        assert!(r["timing"]["seconds_per_epoch"].as_f64().unwrap() > 0.0);
    }
    // Checkpointing 3 layers in segments of 2: the first segment (2 layers) is recomputed
    // whole in each of the 4 micro-batches' backward passes.
    let ck = row(&v, "accumulation ×4 + checkpointing");
    assert_eq!(ck["recomputed_layers"], 8);
    assert!(ck["timing"]["recomputed_layers"].as_u64().unwrap() > 0);
    assert!(v["equivalence"]["same_update_loss_delta"].as_f64().unwrap() <= 1e-3);
}

#[test]
fn a_deep_network_fits_with_mixed_precision_and_checkpointing() {
    let v = json(&[
        "--backend",
        "plan",
        "--hidden",
        "1000",
        "--layers",
        "16",
        "--samples",
        "200000",
        "--device-memory",
        "4GiB",
    ]);
    let best = &v["cheapest"];
    assert_eq!(best["strategy"]["precision"], "mixed");
    assert_eq!(best["strategy"]["accumulation"], 1);
    assert_eq!(best["strategy"]["checkpointing"]["kind"], "sqrt");
    // Segments of 4: the three earlier segments are recomputed whole, four layers each.
    assert_eq!(best["recomputed_layers"], 12);
    assert!((best["extra_forward_passes"].as_f64().unwrap() - 12.0 / 16.0).abs() < 1e-9);
    assert_eq!(row(&v, "mixed + checkpointing")["fits"], true);
    assert_eq!(row(&v, "mixed precision")["fits"], false);
}

#[test]
fn starting_from_float64_makes_float32_a_strategy() {
    let o = run(&["--backend", "plan", "--precision", "float64"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("none (float64)"), "{t}");
    assert!(t.contains("float32 instead of float64"), "{t}");
    assert!(
        t.contains("time:    not measured (the plan backing runs no kernels"),
        "{t}"
    );
}

#[test]
fn a_model_too_large_for_the_card_is_said_plainly() {
    let o = run(&[
        "--backend",
        "plan",
        "--hidden",
        "20000",
        "--layers",
        "8",
        "--device-memory",
        "1GiB",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("Nothing fits"), "{t}");
    assert!(t.contains("model parallelism"), "{t}");
}

/// On wgpu every row is timed: mixed precision always (native or packed float16), float64
/// where the adapter has SHADER_F64 — without it the row says so instead. With no adapter at
/// all the demo says which flag failed.
#[test]
fn wgpu_times_every_precision_the_adapter_has() {
    let o = run(&[
        "--backend",
        "wgpu",
        "--hidden",
        "64",
        "--samples",
        "20000",
        "--time-samples",
        "64",
        "--json",
    ]);
    let t = text(&o);
    if !o.status.success() {
        // No adapter: fine on a laptop, a failure where CI requires one.
        assert!(!gpumem::testing::adapter_required(), "{t}");
        assert!(t.contains("--backend wgpu"), "{t}");
        assert!(!t.contains("panicked"), "{t}");
        return;
    }
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    for name in ["none", "mixed precision"] {
        let timing = &row(&v, name)["timing"];
        assert!(timing["seconds_per_epoch"].is_f64(), "{name}: {timing}");
    }
    let timing = &row(&v, "float64")["timing"];
    let why = timing["not_measured"].as_str().unwrap_or("");
    assert!(
        timing["seconds_per_epoch"].is_f64() || why.contains("not supported by the wgpu backing"),
        "float64: {timing}"
    );
}

#[test]
fn help_shows_the_defaults() {
    let t = text(&run(&["--help"]));
    for flag in [
        "--device-memory",
        "--backend",
        "--hidden",
        "--layers",
        "--batch",
        "--samples",
        "--optimizer",
        "--seed",
        "--precision",
        "--accumulation",
        "--checkpoint",
        "--time-samples",
        "--time-epochs",
        "--json",
    ] {
        assert!(t.contains(flag), "{flag} missing:\n{t}");
    }
    for default in [
        "[default: 2000]",
        "[default: full]",
        "[default: float32]",
        "[default: auto]",
        "[default: sqrt]",
        "[default: 256]",
    ] {
        assert!(t.contains(default), "{default} missing:\n{t}");
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let cases: &[(&[&str], &str)] = &[
        (&["--accumulation", "0"], "at least 1"),
        (&["--accumulation", "many"], "or `auto`"),
        (&["--checkpoint", "-2"], "at least 1"),
        (&["--checkpoint", "half"], "or `sqrt`"),
        (&["--precision", "mixed"], "one of the strategies"),
        (&["--precision", "bf16"], "not a precision"),
        (&["--time-samples", "0"], "at least 1"),
        (&["--time-epochs", "5000"], "at most 1000"),
        (&["--device-memory", "native"], "needs a card size"),
    ];
    for (args, expected) in cases.iter().chain(SHARED_REFUSALS) {
        // On plan, so that a case that wrongly passed validation would still be quick.
        let o = if args.contains(&"--backend") {
            run(args)
        } else {
            run(&[args, &["--backend", "plan"][..]].concat())
        };
        assert_refused(&o, args, expected);
    }
}
