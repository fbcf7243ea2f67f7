//! The library against what the book committed: a recorded model replays to the report the
//! page quotes, the recorder's facts are read as facts, and bad input is a typed error.

use gpumem::lesson::CardChoice;
use gpumem::snapshot::{CudaFact, Snapshot, TraceEntry};
use gpumem_replay::{Note, ReplayError, ReplaySettings, replay, replay_pickle};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const RECORDED: &str = "crates/gpumem/tests/fixtures/recorded";

fn recorded(name: &str) -> Snapshot {
    Snapshot::read(&root().join(RECORDED).join(format!("{name}.pickle"))).unwrap()
}

/// The text block the book committed for the page's replay of the shipped recording on the
/// 16 GB card (`--card 16GiB --largest-batch`), without its fence.
fn committed_example() -> String {
    let page = std::fs::read_to_string(root().join("src/generated/own_model_replay.md")).unwrap();
    let body = page
        .split_once("```text\n")
        .expect("the committed example's text block")
        .1;
    body.split_once("```\n")
        .expect("its closing fence")
        .0
        .to_string()
}

#[test]
fn a_recorded_model_replays_to_the_report_the_book_committed() {
    let snap = recorded("transformer_encoder");
    let settings = ReplaySettings {
        name: format!("{RECORDED}/transformer_encoder.pickle"),
        card: CardChoice::Bytes(16 << 30),
        largest_batch: true,
        ..ReplaySettings::default()
    };
    let r = replay(&snap, &settings).unwrap();
    let committed = committed_example();
    assert_eq!(r.text(gpumem_replay::DEFAULT_FRAMES), committed);
    // The typed fields say what the text says.
    assert!(r.fits && r.failure.is_none());
    for line in [
        format!("peak allocated: {} ", format_bytes(r.peak_allocated)),
        format!("({} B)  (max_memory_reserved)", r.peak_reserved),
    ] {
        assert!(
            committed.contains(&line),
            "{line:?} not in the committed text"
        );
    }
    let l = r.largest_batch.expect("the largest batch was asked");
    let b = l.batch.expect("a batch fits");
    assert!(committed.contains(&format!("largest batch: {b} fits 16.00 GiB")));
    // The recorder's facts: the host counters left out (as many as `cuda_host` lists), no note
    // on cuBLAS's workspaces or Adam's counters, which the replay handles itself, nor on
    // attention or autocast, recorded as CUDA's; each approximate entry passed on.
    let rec = snap.recorder.as_ref().unwrap();
    assert!(
        r.notes
            .iter()
            .any(|n| matches!(n, Note::OnHost { count, .. } if *count == rec.cuda_host.len()))
    );
    let handled = |f: CudaFact| {
        matches!(
            f,
            CudaFact::CublasWorkspaces
                | CudaFact::HostStepCounters
                | CudaFact::Attention
                | CudaFact::Autocast
        )
    };
    assert!(rec.cuda_differences.iter().any(|d| handled(d.fact)));
    for d in &rec.cuda_differences {
        let passed_on = r.notes.contains(&Note::OnCuda(d.text.clone()));
        assert_eq!(passed_on, !handled(d.fact), "{d:?}");
    }
    for a in &rec.approximate {
        assert!(r.notes.contains(&Note::Approximate(a.clone())), "{a:?}");
    }
}

fn format_bytes(b: u64) -> String {
    gpumem::size::format_bytes(b)
}

#[test]
fn every_committed_recording_states_only_facts_the_reader_knows() {
    let dir = root().join(RECORDED);
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "pickle") {
            continue;
        }
        let snap = Snapshot::read(&path).unwrap();
        for d in &snap.recorder.unwrap().cuda_differences {
            assert_ne!(d.fact, CudaFact::Other, "{}: {}", path.display(), d.text);
            seen += 1;
        }
    }
    assert!(seen > 0, "no recorder notes in {}", dir.display());
}

fn entry(action: &str, addr: i64, size: i64) -> TraceEntry {
    TraceEntry {
        action: action.into(),
        addr: Some(addr),
        size,
        ..TraceEntry::default()
    }
}

fn gpu_trace(trace: Vec<TraceEntry>) -> Snapshot {
    Snapshot {
        device_traces: vec![trace],
        ..Snapshot::default()
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let any = ReplaySettings::default();
    assert!(matches!(
        replay_pickle(b"not a pickle", &any),
        Err(ReplayError::Snapshot(_))
    ));
    assert!(matches!(
        replay(&Snapshot::default(), &any),
        Err(ReplayError::Device(_))
    ));
    let twice = gpu_trace(vec![
        entry("alloc", 0x1000, 512),
        entry("free_completed", 0x1000, 512),
        entry("free_completed", 0x1000, 512),
    ]);
    match replay(&twice, &any) {
        Err(ReplayError::Trace(why)) => assert!(why.contains("a second time"), "{why}"),
        other => panic!("freed twice: {other:?}"),
    }
    let one = gpu_trace(vec![entry("alloc", 0x1000, 512)]);
    let another_batch = ReplaySettings {
        batch: Some(2),
        ..ReplaySettings::default()
    };
    assert!(matches!(
        replay(&one, &another_batch),
        Err(ReplayError::Batch(_))
    ));
    assert!(replay(&one, &any).unwrap().fits);
}

#[test]
fn a_recording_s_card_sizes_its_workspaces_unless_another_is_asked() {
    // Recorded for compute capability 9.0 (the recorder's default): without
    // --compute-capability the replay takes that card's, and says so; another asked sizes the
    // workspaces only, and the replay says the kernels are still the recorded card's.
    let snap = recorded("transformer_encoder");
    let rec = snap.recorder.as_ref().unwrap();
    let recorded_for: gpumem::versions::ComputeCapability = rec.card_capability.parse().unwrap();
    let asked = |cc: Option<gpumem::versions::ComputeCapability>| {
        let settings = ReplaySettings {
            card: CardChoice::Bytes(16 << 30),
            compute_capability: cc,
            ..ReplaySettings::default()
        };
        replay(&snap, &settings).unwrap().notes
    };
    assert!(asked(None).contains(&Note::CapabilityOfRecording(recorded_for)));
    let other = gpumem::versions::ComputeCapability { major: 7, minor: 0 };
    assert_ne!(other, recorded_for);
    assert!(asked(Some(other)).contains(&Note::CapabilityNotRecording {
        asked: other,
        recorded: recorded_for
    }));
    assert!(
        !asked(Some(recorded_for))
            .iter()
            .any(|n| matches!(n, Note::CapabilityNotRecording { .. }))
    );
}
