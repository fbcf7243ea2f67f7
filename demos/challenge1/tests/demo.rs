//! The instructor's demo, run as a program: defaults, JSON, help and bad input.

use cli::testing::{Demo, SHARED_REFUSALS, text};
use std::process::Output;

const DEMO: Demo = Demo(env!("CARGO_BIN_EXE_challenge1"));

fn run(args: &[&str]) -> Output {
    DEMO.run(args)
}

#[test]
fn defaults_reproduce_the_lessons_out_of_memory() {
    let o = run(&["--backend", "plan"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("Tried to allocate 8.74 GiB"), "{t}");
    assert!(t.contains("ran out of memory in the forward pass"), "{t}");
    assert!(t.contains("15.90 GiB total capacity"), "{t}");
    // Planned warm-up steps compute no loss, and the line says none.
    assert!(!t.contains("loss"), "{t}");
    assert!(
        t.contains("largest batch whose step fits this card is"),
        "{t}"
    );
}

#[test]
fn json_is_json_with_the_engines_figures() {
    let o = run(&["--backend", "plan", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let attempt = &v["attempt"];
    assert_eq!(attempt["rows"], 1_173_000);
    assert_eq!(attempt["measured"]["oom"]["tried"], 9_384_755_200u64);
    assert_eq!(attempt["measured"]["failed_in"], "forward");
    let largest = v["largest_batch_that_fits"].as_u64().unwrap();
    assert!(largest > 100_000 && largest < 1_173_000, "{largest}");
}

#[test]
fn executes_on_cpu_when_asked() {
    let o = run(&[
        "--backend",
        "cpu",
        "--device-memory",
        "256MiB",
        "--samples",
        "20000",
        "--hidden",
        "64",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("executed on cpu"), "{t}");
    assert!(t.contains("It fits"), "{t}");
    // The warm-up's losses, first and last, when the steps ran.
    assert!(t.contains("(executed on cpu): loss 0."), "{t}");
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
        "--json",
    ] {
        assert!(t.contains(flag), "{flag} missing:\n{t}");
    }
    assert!(
        t.contains("[default: 2000]") && t.contains("[default: full]"),
        "{t}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    DEMO.assert_refuses(SHARED_REFUSALS);
    DEMO.assert_refuses(&[(
        &["--device-memory", "1MiB", "--backend", "plan"],
        "out of memory",
    )]);
}

/// `max_split_size_mb:20` is accepted from PyTorch 2.9 (`>=` 20 MiB) and refused before it
/// (`>`): the demos follow `--torch`'s rule, as the replay does.
#[test]
fn the_split_size_rule_is_the_versions() {
    let args = |torch: &'static str| {
        [
            "--backend",
            "plan",
            "--warmup-steps",
            "1",
            "--batch",
            "64",
            "--max-split-size",
            "20MiB",
            "--torch",
            torch,
        ]
    };
    DEMO.assert_refuses(&[(&args("2.8"), "must be more than 20.00 MiB")]);
    let o = run(&args("2.9"));
    assert!(o.status.success(), "{}", text(&o));
}

/// `WGPU_BACKEND=dx12` on a machine without DirectX leaves wgpu no adapter at all.
#[test]
fn no_adapter_is_a_clear_error_and_auto_falls_back() {
    let env = [("WGPU_BACKEND", "dx12")];
    let o = DEMO.run_with_env(&["--backend", "wgpu"], &env);
    cli::testing::assert_refused(&o, &["--backend", "wgpu"], "no wgpu adapter found");
    let o = DEMO.run_with_env(&["--backend", "auto", "--warmup-steps", "1"], &env);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("cpu backing (auto: no GPU adapter at all"),
        "{t}"
    );
}

/// The lesson's card runs PyTorch 1.12: no block of its snapshot is a library workspace; the
/// same run under `--torch 2.11` has them (so the check can fail).
#[test]
fn the_lessons_card_snapshot_holds_no_workspace() {
    let dir = std::env::temp_dir().join(format!("challenge1-ws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let workspaces = |extra: &[&str]| {
        let path = dir.join("s.pickle");
        let p = path.to_str().unwrap();
        let mut args = vec!["--card", "lesson", "--backend", "plan", "--batch", "1000"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--memory-snapshot", p]);
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        let bytes = std::fs::read(&path).unwrap();
        let needle = b"workspace";
        bytes.windows(needle.len()).filter(|w| w == needle).count()
    };
    assert_eq!(workspaces(&[]), 0);
    assert!(workspaces(&["--torch", "2.11"]) > 0);
    std::fs::remove_dir_all(&dir).ok();
}
