//! memviz on snapshots of our own and on fixtures built from PyTorch's documented format
//! (tests/fixtures/make_fixtures.py), and on input that is not a snapshot.

mod common;

use common::temp;
use gpumem::Device;
use gpumem::alloc::History;
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::size::format_bytes;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run(args: &[&str]) -> anyhow::Result<String> {
    memviz::run(std::iter::once("memviz").chain(args.iter().copied()))
}

#[test]
fn a_snapshot_of_ours_reads_with_its_names_and_figures() {
    let device = Device::plan(1 << 30);
    device.record_memory_history(true, History::UNBOUNDED);
    let mut mlp = Mlp::new(&device, &MlpConfig::lesson(256), 0).expect("fits");
    mlp.train_step(Batch::Planned(512)).expect("fits");
    let path = temp("ours.pickle");
    device.dump_snapshot(&path).expect("writes");
    let svg = temp("ours.svg");
    let out = run(&[path.to_str().unwrap(), "--svg", svg.to_str().unwrap()]).expect("reads");
    let reserved = format!("reserved {}", format_bytes(device.memory_reserved()));
    let allocated = format!("allocated {}", format_bytes(device.memory_allocated()));
    let peak = format!(
        "peak reserved {}",
        format_bytes(device.max_memory_reserved())
    );
    for want in [&reserved, &allocated, &peak, &"layer1.weight".to_string()] {
        assert!(out.contains(want.as_str()), "{want:?} missing from:\n{out}");
    }
    let drawn = std::fs::read_to_string(&svg).expect("the timeline is written");
    assert!(drawn.contains("<metadata id=\"tensor-timeline\">"));
    assert!(
        drawn.contains("\nz0\n</text>"),
        "the activation z0 is named"
    );
    let json: serde_json::Value =
        serde_json::from_str(&run(&[path.to_str().unwrap(), "--json"]).unwrap()).unwrap();
    let d = &json["devices"][0];
    assert_eq!(d["reserved"], device.memory_reserved());
    assert_eq!(
        d["peak_requested"],
        device.memory_stats().requested_bytes.all.peak
    );
    assert_eq!(json["problems"].as_array().map(Vec::len), Some(0));
}

#[test]
fn a_hand_built_pytorch_snapshot_reads() {
    // The fixture's segments: 20 MiB (4 + 2 MiB live), 2 MiB (512 B live), 40 MiB mapped
    // of an expandable segment (30 MiB live); one oom of 64 MiB with 5 MiB free.
    let file = fixture("hand_built.pickle");
    let out = run(&[file.to_str().unwrap()]).expect("reads");
    let reserved = format_bytes(20 * MIB + 2 * MIB + 40 * MIB);
    let allocated = format_bytes(4 * MIB + 2 * MIB + 512 + 30 * MIB);
    assert!(out.contains(&format!("reserved {reserved}")), "{out}");
    assert!(out.contains(&format!("allocated {allocated}")), "{out}");
    assert!(out.contains(&format!(
        "a request of {} failed with {} free",
        format_bytes(64 * MIB),
        format_bytes(5 * MIB)
    )));
    let largest = out.lines().skip_while(|l| !l.starts_with("largest")).nth(1);
    assert!(largest.is_some_and(|l| l.ends_with("activations")), "{out}");
    assert!(!out.contains("warning"), "the fixture's blocks tile: {out}");
}

#[test]
fn pytorch_s_own_profile_snapshot_reads() {
    // Made by torch.cuda._memory_viz._profile_to_snapshot on a CPU profile: no segment
    // figures, blocks without addresses, frames shared between entries.
    let file = fixture("profile_snapshot.pickle");
    let svg = temp("profile.svg");
    let out = run(&[file.to_str().unwrap(), "--svg", svg.to_str().unwrap()]).expect("reads");
    assert!(out.contains("device 0: 1 segment(s)"), "{out}");
    assert!(out.contains("run_backward"), "frames read: {out}");
    assert!(std::fs::metadata(&svg).is_ok_and(|m| m.len() > 0));
}

#[test]
fn what_is_not_a_snapshot_is_refused_clearly() {
    let err = |p: &Path| {
        run(&[p.to_str().unwrap()])
            .expect_err("refused")
            .to_string()
    };
    let json = temp("s.json");
    std::fs::write(&json, "{\"segments\": []}").unwrap();
    assert!(err(&json).contains("looks like JSON"), "{}", err(&json));
    let list = temp("list.pickle");
    std::fs::write(&list, b"\x80\x02]q\x00(K\x01K\x02K\x03e.").unwrap();
    assert!(
        err(&list).contains("not a memory snapshot"),
        "{}",
        err(&list)
    );
    let cut = temp("cut.pickle");
    let whole = std::fs::read(fixture("hand_built.pickle")).unwrap();
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    assert!(err(&cut).contains("truncated"), "{}", err(&cut));
    assert!(err(Path::new("/no/such/file.pickle")).contains("cannot read"));
    let svg = run(&[
        fixture("hand_built.pickle").to_str().unwrap(),
        "--svg",
        "/no/such/folder/t.svg",
    ]);
    assert!(
        svg.expect_err("unwritable")
            .to_string()
            .contains("cannot write")
    );
    let device = run(&[
        fixture("hand_built.pickle").to_str().unwrap(),
        "--device",
        "3",
    ]);
    assert!(
        device
            .expect_err("no device 3")
            .to_string()
            .contains("device 3")
    );
}

#[test]
fn the_program_exits_non_zero_on_bad_input_and_has_help() {
    let bin = env!("CARGO_BIN_EXE_memviz");
    let bad = Command::new(bin)
        .arg("/no/such/file.pickle")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.starts_with("error: cannot read"), "{stderr}");
    let help = Command::new(bin).arg("--help").output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("view") && text.contains("replay"), "{text}");
    let help = Command::new(bin).args(["view", "--help"]).output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("--svg") && text.contains("--json") && text.contains("[default: 8]"));
}

/// A file of another kind (a `torch.save` zip above all) is named in one line, by `view` and
/// `replay` alike, with what memviz reads instead, and the program exits 1.
#[test]
fn a_file_of_another_kind_is_named_in_one_line() {
    let bin = env!("CARGO_BIN_EXE_memviz");
    let zip = temp("model.pt");
    // A zip's local file header, as torch.save's archive starts: "PK\x03\x04", then more.
    std::fs::write(&zip, b"PK\x03\x04\x14\x00\x00\x00\x08\x00archive/data.pkl").unwrap();
    let png = temp("figure.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR").unwrap();
    let svg = temp("timeline.svg");
    std::fs::write(&svg, "<?xml version=\"1.0\"?>\n<svg xmlns=\"x\"></svg>\n").unwrap();
    let empty = temp("empty.pickle");
    std::fs::write(&empty, b"").unwrap();
    let cases = [
        (&zip, "is a zip archive, as torch.save writes"),
        (&png, "is a PNG image"),
        (&svg, "is an SVG drawing"),
        (&empty, "is empty"),
    ];
    for (file, what) in cases {
        for command in ["view", "replay"] {
            let out = Command::new(bin)
                .args([command, file.to_str().unwrap()])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command} {file:?}: {stderr}");
            let want = format!("error: {} {what}", file.display());
            assert!(
                stderr.starts_with(&want),
                "{command}: {want:?} missing from {stderr:?}"
            );
            assert!(
                stderr.contains("memviz reads the pickle torch.cuda.memory._dump_snapshot"),
                "{stderr}"
            );
            assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr:?}");
        }
    }
}

/// `memviz --help` names both subcommands; `memviz FILE` is still `memviz view FILE`.
#[test]
fn view_and_replay_are_subcommands_and_a_file_alone_is_a_view() {
    let help = run(&["--help"]).unwrap_err().to_string();
    for want in ["view", "replay", "Usage: memviz <COMMAND>"] {
        assert!(help.contains(want), "{want:?} missing from:\n{help}");
    }
    let replay_help = run(&["replay", "--help"]).unwrap_err().to_string();
    assert!(replay_help.contains("--largest-batch") && replay_help.contains("--json"));
    let path = fixture("hand_built.pickle");
    let p = path.to_str().unwrap();
    let old = run(&[p, "--json"]).unwrap();
    assert_eq!(run(&["view", p, "--json"]).unwrap(), old);
    assert_eq!(run(&["--json", p]).unwrap(), old);
}

#[test]
fn a_step_that_does_not_fit_has_its_own_exit_status() {
    // 3 for "does not fit", so that a script can branch on it; 0 for a step that fits; 1 for
    // a file memviz cannot use; 2 for a command line clap refuses. The out-of-memory
    // snapshot is the H200's own, on the card it ran out of.
    let bin = env!("CARGO_BIN_EXE_memviz");
    let gpu = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu/2026-11-28-h200");
    let status = |args: &[&str]| {
        std::process::Command::new(bin)
            .args(args)
            .output()
            .unwrap()
            .status
            .code()
    };
    let oom = gpu.join("challenge1_r1173000.pickle");
    let fits = gpu.join("lesson_sgd.pickle");
    let (oom, fits) = (oom.to_str().unwrap(), fits.to_str().unwrap());
    assert_eq!(status(&["replay", oom, "--card", "17072914432"]), Some(3));
    assert_eq!(
        status(&["replay", oom, "--card", "17072914432", "--json"]),
        Some(3)
    );
    assert_eq!(status(&["replay", fits, "--card", "150109880320"]), Some(0));
    assert_eq!(status(&["replay", "/nonexistent.pickle"]), Some(1));
    assert_eq!(status(&["replay", fits, "--card", "0"]), Some(2));
    assert_eq!(status(&["view", oom]), Some(0), "a view has no verdict");
}
