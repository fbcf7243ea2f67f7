//! The page's answers against `memviz replay`'s, in one process: the same report document,
//! the same text, the same exit status, the same message for a file it cannot use.

use super::*;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

const RECORDING: &str = "crates/gpumem/tests/fixtures/recorded/transformer_encoder.pickle";
const H200: &str = "crates/memviz/tests/fixtures/gpu/2026-11-28-h200/transformer_encoder.pickle";
const OOM: &str = "crates/memviz/tests/fixtures/gpu/2026-11-28-h200/challenge1_r1173000.pickle";

/// `request` about the fixture at `rel`, named by its path as the command line names it.
fn about(rel: &str, request: Request) -> Request {
    Request {
        name: fixture(rel).display().to_string(),
        ..request
    }
}

/// The page's answer to `request` about `bytes`.
fn page(request: &Request, bytes: &[u8]) -> Value {
    let json = serde_json::to_string(request).expect("prints");
    serde_json::from_str(&answer(&json, bytes, &mut |_| {})).expect("the answer is JSON")
}

/// What `memviz replay` prints for the page's command line (with `--json` when asked) and
/// its exit status, or its error message.
fn cli(request: &Request, json: bool) -> Result<(String, u8), String> {
    let args = std::iter::once("memviz".to_string())
        .chain(request.args())
        .chain(json.then(|| "--json".to_string()));
    match memviz::answer(args) {
        Ok(a) => Ok((a.text, if a.does_not_fit { DOES_NOT_FIT } else { 0 })),
        Err(e) => Err(format!("{e:#}")),
    }
}

/// The page and the command line on the same file and settings: equal report, text, exit.
fn same_as_cli(rel: &str, request: Request) -> Value {
    let request = about(rel, request);
    let answer = page(&request, &std::fs::read(fixture(rel)).expect("reads"));
    let (json, exit) = cli(&request, true).expect("memviz replays it");
    let document: Value = serde_json::from_str(&json).expect("memviz prints JSON");
    assert_eq!(
        answer["report"], document,
        "{rel}: the report differs from memviz's --json"
    );
    assert_eq!(answer["exit"], exit, "{rel}: the exit status differs");
    let (text, _) = cli(&request, false).expect("memviz replays it");
    assert_eq!(answer["text"], text.as_str(), "{rel}: the text differs");
    answer
}

#[test]
fn a_recording_on_a_card_by_size_with_its_largest_batch_answers_as_memviz() {
    let asked = Request {
        card: "24GiB".into(),
        largest_batch: true,
        ..Request::default()
    };
    let a = same_as_cli(RECORDING, asked);
    assert_eq!(a["exit"], 0);
    assert!(
        a["report"]["largest_batch"]["batch"].is_u64(),
        "{}",
        a["report"]
    );
}

#[test]
fn a_real_h200_snapshot_with_other_allocator_settings_answers_as_memviz() {
    let asked = Request {
        card: "lesson".into(),
        alloc_conf: "expandable_segments:True".into(),
        torch: "2.11".into(),
        ..Request::default()
    };
    same_as_cli(H200, asked);
}

#[test]
fn a_snapshot_that_runs_out_answers_with_pytorchs_message_and_exit_3() {
    let a = same_as_cli(
        OOM,
        Request {
            card: "lesson".into(),
            ..Request::default()
        },
    );
    assert_eq!(a["exit"], DOES_NOT_FIT);
    assert!(
        a["text"].as_str().unwrap().contains("CUDA out of memory"),
        "{}",
        a["text"]
    );
}

#[test]
fn the_pages_default_searches_the_largest_batch_only_where_the_file_allows_it() {
    let when_possible = Request {
        largest_batch_when_possible: true,
        ..Request::default()
    };
    let recording = page(
        &about(RECORDING, when_possible.clone()),
        &std::fs::read(fixture(RECORDING)).unwrap(),
    );
    assert!(
        recording["report"]["largest_batch"]["batch"].is_u64(),
        "{recording}"
    );
    assert!(
        recording["command"]
            .as_str()
            .unwrap()
            .ends_with(" --largest-batch")
    );
    assert!(recording["largest_batch_skipped"].is_null());
    let gpu = page(
        &about(H200, when_possible),
        &std::fs::read(fixture(H200)).unwrap(),
    );
    assert_eq!(gpu["exit"], 0, "{gpu}");
    assert!(gpu["report"]["largest_batch"].is_null());
    let why = gpu["largest_batch_skipped"].as_str().unwrap();
    assert!(why.contains("needs a trace the recorder"), "{why}");
    assert!(!gpu["command"].as_str().unwrap().contains("--largest-batch"));
}

#[test]
fn a_file_memviz_cannot_use_gets_its_message() {
    let hostile = fixture("crates/replay-page/tests/hostile.pickle");
    let zip = b"PK\x03\x04 a torch.save archive".to_vec();
    for (name, bytes) in [
        (
            hostile.display().to_string(),
            std::fs::read(&hostile).expect("reads"),
        ),
        ("model.pt".to_string(), zip),
        ("empty.pickle".to_string(), Vec::new()),
    ] {
        let request = Request {
            name: name.clone(),
            ..Request::default()
        };
        let a = page(&request, &bytes);
        assert_eq!(a["exit"], REFUSED, "{name}: {a}");
        let message = a["error"].as_str().expect("a message");
        if name.ends_with("hostile.pickle") {
            let cli_error = cli(&request, true).expect_err("memviz refuses it");
            assert!(
                cli_error.ends_with(message),
                "{name}: page {message:?}, memviz {cli_error:?}"
            );
        }
        assert!(
            !message.is_empty() && !message.contains('\n'),
            "{name}: {message}"
        );
    }
}

#[test]
fn a_setting_memviz_refuses_is_refused_before_the_file_is_read() {
    let a = page(
        &Request {
            batch: "0".into(),
            ..Request::default()
        },
        b"not read",
    );
    assert_eq!(a["error"], "--batch 0: must be at least 1, got 0");
    let a = answer("{\"cards\": \"80GiB\"}", b"", &mut |_| {});
    assert!(a.contains("unknown field `cards`"), "{a}");
}

#[test]
fn progress_reaches_the_end_of_the_file_and_of_the_replay() {
    let request = about(RECORDING, Request::default());
    let bytes = std::fs::read(fixture(RECORDING)).expect("reads");
    let (mut read, mut replayed) = (0, (0, 0));
    replay(&request, &bytes, &mut |s| match s {
        Stage::Reading { at, .. } => read = at,
        Stage::Replay(Progress::Replaying { done, of }) => replayed = (done, of),
        Stage::Replay(Progress::Searching { .. }) => {}
    })
    .expect("replays");
    assert_eq!(read, bytes.len() as u64);
    assert!(replayed.1 > 0 && replayed.0 == replayed.1, "{replayed:?}");
}
