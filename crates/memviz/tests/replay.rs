//! `memviz replay` on traces built here, each to show one rule: PyTorch's rounding and
//! segment sizes decide the largest batch; the error is PyTorch's sentence in the asked
//! version's words, at the entry and tensor that failed; `empty_cache()` is replayed and the
//! allocator's own releases are not; tensors alive before a truncated trace come from the
//! dump; and bad input is refused with a message that says what is wrong.

mod common;

use common::{TempFile, temp};
use gpumem::snapshot::{
    ACTIVE_ALLOCATED, Affine, Block, Frame, Recorded, Segment, Snapshot, TraceEntry,
};
use serde_json::Value;
use std::path::Path;

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;

fn e(action: &str, addr: i64, size: i64, name: &str) -> TraceEntry {
    TraceEntry {
        action: action.into(),
        addr: Some(addr),
        size,
        frames: vec![Frame::tensor(name, None)].into(),
        ..TraceEntry::default()
    }
}

/// A recorder's trace: each (name, bytes, freed later?) allocated in turn at its own address.
fn recorded(trace: Vec<TraceEntry>, batch: u64, affine: Affine) -> Snapshot {
    Snapshot {
        device_traces: vec![trace],
        recorder: Some(Recorded {
            template: "test.py".into(),
            torch: "2.15.0".into(),
            batch,
            steps: 1,
            affine,
            ..Recorded::default()
        }),
        ..Snapshot::default()
    }
}

fn write(name: &str, s: &Snapshot) -> TempFile {
    let p = temp(name);
    s.write(&p).unwrap();
    p
}

fn replay(path: &Path, args: &[&str]) -> anyhow::Result<Value> {
    let mut all = vec!["memviz", "replay", path.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    Ok(serde_json::from_str(&memviz::run(all)?)?)
}

fn refused(path: &Path, args: &[&str]) -> String {
    match replay(path, args) {
        Ok(v) => panic!("{args:?} replayed: {v}"),
        Err(e) => format!("{e:#}"),
    }
}

/// Three tensors of 6 GiB, the first freed before the third: 12 GiB at once fits 15.90 GiB.
fn three(free_first: bool) -> Snapshot {
    let mut t = vec![
        e("alloc", 0x1000, 6 * GIB, "a"),
        e("alloc", 0x2000, 6 * GIB, "b"),
    ];
    if free_first {
        t.push(e("free_completed", 0x1000, 6 * GIB, "a"));
    }
    t.push(e("alloc", 0x3000, 6 * GIB, "c"));
    recorded(t, 1, Affine::Not("built by hand".into()))
}

#[test]
fn the_error_is_pytorchs_in_the_asked_versions_words() {
    let p = write("oom.pickle", &three(false));
    let old = replay(&p, &["--torch", "1.12"]).unwrap();
    assert_eq!(old["fits"], false);
    let f = &old["failure"];
    assert_eq!(f["entry"], 2, "{f}");
    assert_eq!(f["tensor"], "c");
    assert_eq!(f["exception"], "RuntimeError");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.starts_with("CUDA out of memory. Tried to allocate 6.00 GiB (GPU 0; 15.90 GiB total capacity; 12.00 GiB already allocated;"),
        "{m}"
    );
    let new = replay(&p, &["--torch", "2.15"]).unwrap();
    let m = new["failure"]["message"].as_str().unwrap();
    assert!(
        m.contains(". GPU 0 has a total capacity of 15.90 GiB of which"),
        "{m}"
    );
    assert_eq!(new["failure"]["exception"], "torch.cuda.OutOfMemoryError");
    // The same trace with `a` freed first fits, at 12 GiB.
    let fits = replay(&write("fits.pickle", &three(true)), &[]).unwrap();
    assert_eq!(fits["fits"], true);
    assert_eq!(fits["peak_allocated"], 12 * GIB);
    // And on a 24 GiB card the first one fits too.
    assert_eq!(replay(&p, &["--card", "24GiB"]).unwrap()["fits"], true);
    // Memory outside the allocator counts against the card.
    let ctx = replay(
        &write("fits2.pickle", &three(true)),
        &["--context-memory", "4GiB"],
    )
    .unwrap();
    assert_eq!(ctx["fits"], false);
}

#[test]
fn the_largest_batch_follows_pytorchs_segment_rounding() {
    // One tensor of 1 MiB per row (large pool: segments rounded up to 2 MiB) on a 64 MiB
    // card: 64 rows take the whole card, 65 a 66 MiB segment.
    let s = recorded(
        vec![e("alloc", 0x1000, 8 * MIB, "x")],
        8,
        Affine::Form {
            at_zero: vec![0],
            per_row: vec![MIB],
        },
    );
    let p = write("affine.pickle", &s);
    let v = replay(&p, &["--card", "64MiB", "--largest-batch"]).unwrap();
    assert_eq!(v["largest_batch"]["batch"], 64, "{v}");
    let at = replay(&p, &["--card", "64MiB", "--batch", "65"]).unwrap();
    assert_eq!(at["fits"], false);
    assert_eq!(at["failure"]["tried"], 66 * MIB);
    // Nothing grows: every batch fits.
    let flat = recorded(
        vec![e("alloc", 0x1000, MIB, "w")],
        8,
        Affine::Form {
            at_zero: vec![MIB],
            per_row: vec![0],
        },
    );
    let v = replay(&write("flat.pickle", &flat), &["--largest-batch"]).unwrap();
    assert_eq!(v["largest_batch"]["answer"], "unbounded");
}

/// A GPU's trace: 30 MiB allocated and freed, then `segment_free` of its 30 MiB segment.
fn released(then: Option<TraceEntry>) -> Snapshot {
    let mut t = vec![
        e("segment_alloc", 0x10000, 30 * MIB, "x"),
        e("alloc", 0x10000, 30 * MIB, "x"),
        e("free_requested", 0x10000, 30 * MIB, "x"),
        e("free_completed", 0x10000, 30 * MIB, "x"),
        e("segment_free", 0x10000, 30 * MIB, "x"),
    ];
    t.extend(then);
    Snapshot {
        device_traces: vec![t],
        ..Snapshot::default()
    }
}

#[test]
fn empty_cache_is_replayed_and_the_allocators_own_releases_are_not() {
    let v = replay(&write("empty.pickle", &released(None)), &[]).unwrap();
    assert_eq!(v["end"]["reserved"], 0, "{v}");
    assert_eq!(v["peak_reserved"], 30 * MIB);
    // Followed by the allocator taking a new segment: its own retry, not replayed.
    let own = released(Some(e("segment_alloc", 0x20000, 40 * MIB, "y")));
    let v = replay(&write("own.pickle", &own), &[]).unwrap();
    assert_eq!(v["end"]["reserved"], 30 * MIB, "{v}");
}

#[test]
fn tensors_alive_before_a_truncated_trace_come_from_the_dump() {
    // The trace begins after `w` (4 MiB) was allocated: its free has no alloc, and the dump's
    // segment holds its address, with `k` (2 MiB) still alive and never in the trace.
    let seg = Segment {
        address: 0x100000,
        total_size: 20 * MIB,
        segment_type: "large".into(),
        blocks: vec![
            Block {
                address: Some(0x100000),
                size: 4 * MIB,
                requested_size: Some(0),
                state: "inactive".into(),
                ..Block::default()
            },
            Block {
                address: Some(0x100000 + 4 * MIB),
                size: 2 * MIB,
                requested_size: Some(2 * MIB),
                state: ACTIVE_ALLOCATED.into(),
                frames: vec![Frame::tensor("k", None)].into(),
            },
            Block {
                address: Some(0x100000 + 6 * MIB),
                size: 14 * MIB,
                requested_size: Some(0),
                state: "inactive".into(),
                ..Block::default()
            },
        ],
        ..Segment::default()
    };
    let trace = vec![
        e("free_requested", 0x100000, 4 * MIB, "w"),
        e("free_completed", 0x100000, 4 * MIB, "w"),
    ];
    let s = Snapshot {
        segments: vec![seg],
        device_traces: vec![trace.clone()],
        ..Snapshot::default()
    };
    let v = replay(&write("truncated.pickle", &s), &[]).unwrap();
    assert_eq!(v["alive_at_start"], 2, "{v}");
    assert_eq!(v["peak_allocated"], 6 * MIB);
    assert_eq!(v["end"]["allocated"], 2 * MIB);
    // Without the dump nothing says `w` was there: refused.
    let bare = Snapshot {
        device_traces: vec![trace],
        ..Snapshot::default()
    };
    let why = refused(&write("bare.pickle", &bare), &[]);
    assert!(why.contains("truncated trace without a dump"), "{why}");
}

#[test]
fn the_replayed_snapshot_reads_back_with_the_traces_names() {
    let p = write("named.pickle", &three(true));
    let out = temp("named-out.pickle");
    let v = replay(&p, &["--memory-snapshot", out.to_str().unwrap()]).unwrap();
    let s = Snapshot::read(&out).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    let names: Vec<&str> = s
        .trace(0)
        .iter()
        .filter(|e| e.action == "alloc")
        .map(|e| &*e.frames[0].name)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    // memviz's own reading of it agrees with the replay.
    let summary = s.summary(0, 0);
    assert_eq!(
        summary.peak_reserved as i64,
        v["peak_reserved"].as_i64().unwrap()
    );
    assert_eq!(summary.peak_requested as i64, 12 * GIB);
}

/// Each case is refused, its message saying `says`.
fn assert_refused(cases: Vec<(&str, Snapshot, Vec<&str>, &str)>) {
    for (name, snap, args, says) in cases {
        let why = refused(&write(name, &snap), &args);
        assert!(why.contains(says), "{name} {args:?}: {why}");
    }
}

#[test]
fn bad_traces_are_refused_with_what_is_wrong() {
    let one = |t: Vec<TraceEntry>| recorded(t, 4, Affine::Not("by hand".into()));
    assert_refused(vec![
        (
            "never.pickle",
            one(vec![e("free_completed", 0x10, 512, "x")]),
            vec![],
            "never allocated",
        ),
        (
            "negative.pickle",
            one(vec![e("alloc", 0x10, -5, "x")]),
            vec![],
            "negative size",
        ),
        (
            "absurd.pickle",
            one(vec![e("alloc", 0x10, 1 << 52, "x")]),
            vec![],
            "pebibyte",
        ),
        (
            "twice.pickle",
            one(vec![
                e("alloc", 0x10, 512, "x"),
                e("free_completed", 0x10, 512, "x"),
                e("free_completed", 0x10, 512, "x"),
            ]),
            vec![],
            "second time",
        ),
    ]);
}

#[test]
fn bad_flags_are_refused_with_what_is_wrong() {
    let one = |t: Vec<TraceEntry>| recorded(t, 4, Affine::Not("by hand".into()));
    assert_refused(vec![
        (
            "notaffine.pickle",
            one(vec![e("alloc", 0x10, 512, "x")]),
            vec!["--batch", "8"],
            "not affine",
        ),
        (
            "gpu-batch.pickle",
            released(None),
            vec!["--batch", "8"],
            "only a trace recorded",
        ),
        (
            "card0.pickle",
            released(None),
            vec!["--card", "0"],
            "0 bytes",
        ),
        (
            "unit.pickle",
            released(None),
            vec!["--card", "16XB"],
            "not a unit",
        ),
        (
            "conf.pickle",
            released(None),
            vec!["--alloc-conf", "roundup_power2_divisions:4"],
            "not modelled",
        ),
        (
            "frac.pickle",
            released(None),
            vec!["--memory-fraction", "1.5"],
            "from 0 to 1",
        ),
        (
            "ctx.pickle",
            released(None),
            vec!["--context-memory", "20GiB"],
            "more than the card",
        ),
        (
            "out.pickle",
            released(None),
            vec!["--memory-snapshot", "/no/such/folder/x.pickle"],
            "does not exist",
        ),
    ]);
}

#[test]
fn traces_the_replay_cannot_take_as_they_are_are_refused() {
    // Several devices: pick one.
    let two = Snapshot {
        device_traces: vec![
            released(None).device_traces[0].clone(),
            released(None).device_traces[0].clone(),
        ],
        ..Snapshot::default()
    };
    let p = write("two.pickle", &two);
    assert!(refused(&p, &[]).contains("--device N"));
    assert_eq!(replay(&p, &["--device", "1"]).unwrap()["device"], 1);
    // Two streams: refused, not replayed as one.
    let mut streams = released(None);
    streams.device_traces[0][1].stream = 7;
    assert!(refused(&write("streams.pickle", &streams), &[]).contains("streams"));
    // Not a snapshot at all.
    let junk = temp("junk.pickle");
    std::fs::write(&junk, b"{\"segments\": []}").unwrap();
    assert!(refused(&junk, &[]).contains("JSON"));
    // An affine form that would go negative at the batch asked.
    let neg = recorded(
        vec![e("alloc", 0x10, 512, "x")],
        4,
        Affine::Form {
            at_zero: vec![-1024],
            per_row: vec![384],
        },
    );
    assert!(refused(&write("neg.pickle", &neg), &["--batch", "1"]).contains("negative"));
}
