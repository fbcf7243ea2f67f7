//! The snapshot's structure (segments tiled, addresses, actions, names), its pickle (round
//! trip, only the opcodes PyTorch's viewer reads) and every kind of bad input.

use super::*;
use crate::alloc::{History, round_size};
use crate::device::Device;
use crate::mlp::{Batch, Mlp, MlpConfig};

/// A planned training step of a small lesson-shaped network, with the history on from the
/// start; `capacity` small enough makes it run out.
fn step_snapshot(capacity: u64, batch: u64) -> (Device, Snapshot) {
    let (device, snap, _) = step_snapshot_allocated(capacity, batch);
    (device, snap)
}

/// [`step_snapshot`], with `memory_allocated()` when the snapshot was taken.
fn step_snapshot_allocated(capacity: u64, batch: u64) -> (Device, Snapshot, u64) {
    let device = Device::plan(capacity);
    device.record_memory_history(true, History::UNBOUNDED);
    let config = MlpConfig::lesson(64);
    // The network stays alive until the snapshot is taken.
    let mlp = Mlp::new(&device, &config, 0).map(|mut m| {
        let _ = m.train_step(Batch::Planned(batch));
        m
    });
    let snap = device.memory_snapshot();
    let allocated = device.memory_allocated();
    drop(mlp);
    (device, snap, allocated)
}

fn actions(s: &Snapshot) -> Vec<&str> {
    s.device_traces[0]
        .iter()
        .map(|e| e.action.as_str())
        .collect()
}

#[test]
fn segments_are_tiled_by_their_blocks() {
    let (device, s, allocated_then) = step_snapshot_allocated(1 << 30, 256);
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    assert!(!s.segments.is_empty());
    let reserved: i64 = s.segments.iter().map(|g| g.total_size).sum();
    assert_eq!(reserved as u64, device.memory_reserved());
    let allocated: i64 = s.segments.iter().map(|g| g.allocated_size).sum();
    assert!(allocated > 0, "the network is alive at the dump");
    assert_eq!(allocated as u64, allocated_then);
    for g in &s.segments {
        let mut at = g.address;
        for b in &g.blocks {
            assert_eq!(b.address, Some(at), "blocks follow on");
            at += b.size;
            assert!(b.state == ACTIVE_ALLOCATED || b.state == INACTIVE);
            assert_eq!(b.is_active(), !b.frames.is_empty(), "live blocks are named");
        }
        assert!(g.segment_type == "small" || g.segment_type == "large");
    }
    let addrs: Vec<i64> = s.segments.iter().map(|g| g.address).collect();
    assert!(addrs.windows(2).all(|w| w[0] < w[1]), "address order");
}

#[test]
fn the_trace_has_pytorch_actions_and_sizes() {
    let (device, s) = step_snapshot(1 << 30, 256);
    let trace = &s.device_traces[0];
    let a = actions(&s);
    assert_eq!(a.first(), Some(&"segment_alloc"));
    assert!(a.contains(&"alloc") && a.contains(&"free_requested"));
    // Every free is a free_requested right before its free_completed, same address and size.
    for (i, e) in trace.iter().enumerate() {
        if e.action == "free_requested" {
            let next = &trace[i + 1];
            assert_eq!(next.action, "free_completed");
            assert_eq!((next.addr, next.size), (e.addr, e.size));
        }
    }
    // alloc records the bytes asked for (the parameters are float32: 4 bytes a value).
    let w = trace
        .iter()
        .find(|e| e.action == "alloc" && frames_name(&e.frames) == Some("layer1.weight"))
        .expect("layer1.weight is allocated in the trace");
    let config = MlpConfig::lesson(64);
    assert_eq!(
        w.size as u64,
        4 * config.inputs * 64,
        "inputs × hidden, unrounded"
    );
    assert!(trace.iter().all(|e| e.stream == 0 && e.time_us.is_some()));
    assert!(
        trace.windows(2).all(|w| w[0].time_us <= w[1].time_us),
        "time_us orders the entries"
    );
    // The summary's peaks, rebuilt backwards from the dump, are the allocator's own.
    let stats = device.memory_stats();
    let sum = s.summary(0, 3);
    assert_eq!(sum.peak_reserved, stats.reserved_bytes.all.peak);
    assert_eq!(sum.peak_requested, stats.requested_bytes.all.peak);
    assert_eq!(sum.largest.len(), 3);
    assert!(sum.largest.windows(2).all(|w| w[0].1 >= w[1].1));
}

#[test]
fn an_out_of_memory_is_recorded_with_the_free_bytes() {
    let (device, s) = step_snapshot(8 << 20, 20_000);
    let oom = s.device_traces[0]
        .iter()
        .find(|e| e.action == "oom")
        .expect("the step runs out on an 8 MiB card");
    assert_eq!(oom.addr, None, "PyTorch writes device_free in addr's place");
    let free = (8u64 << 20) - device.memory_reserved();
    assert_eq!(oom.device_free, Some(free as i64));
    assert_eq!(oom.size as u64, round_size(oom.size as u64).unwrap());
    assert_eq!(s.summary(0, 1).ooms.len(), 1);
}

#[test]
fn the_timeline_has_a_band_per_tensor() {
    let (_, s) = step_snapshot(1 << 30, 256);
    let t = s.timeline(0);
    assert_eq!(t.steps, s.device_traces[0].len());
    assert_eq!(t.reserved.len(), t.steps + 1);
    assert_eq!(t.reserved[0], 0, "the history starts on an empty device");
    let allocs = actions(&s).iter().filter(|a| **a == "alloc").count();
    assert_eq!(t.bands.len(), allocs);
    let names: Vec<&str> = t.bands.iter().map(|b| b.name.as_str()).collect();
    assert!(
        t.bands.iter().any(|b| b.name == "z0" && b.end.is_some()),
        "{names:?}"
    );
    assert!(t.bands.iter().all(|b| b.end.is_none_or(|e| e > b.start)));
}

#[test]
fn a_pickle_reads_back_the_same() {
    let (_, s) = step_snapshot(1 << 30, 256);
    let bytes = s.to_pickle().expect("pickles");
    assert_eq!(&bytes[..2], b"\x80\x02", "protocol 2, as PyTorch writes");
    assert_eq!(Snapshot::from_pickle(&bytes).expect("reads"), s);
    let dir = std::env::temp_dir().join(format!("gpumem-snapshot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.pickle");
    s.write(&path).expect("writes");
    assert_eq!(Snapshot::read(&path).expect("reads"), s);
    std::fs::remove_dir_all(&dir).ok();
}

/// The opcodes `MemoryViz.js`'s own unpickler knows (its `unpickle`), with the bytes each
/// takes after it; -4 marks a 4-byte length followed by that many bytes.
const VIEWER_OPCODES: &[(u8, i32)] = &[
    (0x80, 1),  // PROTO
    (b'}', 0),  // EMPTY_DICT
    (b']', 0),  // EMPTY_LIST
    (b'(', 0),  // MARK
    (b'u', 0),  // SETITEMS
    (b'e', 0),  // APPENDS
    (b'a', 0),  // APPEND
    (b'J', 4),  // BININT
    (b'K', 1),  // BININT1
    (b'M', 2),  // BININT2
    (0x88, 0),  // NEWTRUE
    (0x89, 0),  // NEWFALSE
    (b'N', 0),  // NONE
    (b'G', 8),  // BINFLOAT
    (b'X', -4), // BINUNICODE
    (b'.', 0),  // STOP
];

#[test]
fn the_pickle_uses_only_what_the_viewer_reads() {
    let (_, s) = step_snapshot(8 << 20, 20_000); // with an oom and a float in the settings
    let bytes = s.to_pickle().unwrap();
    let mut i = 0;
    while i < bytes.len() {
        let op = bytes[i];
        i += 1;
        if op == 0x8a {
            // LONG1: the viewer reads up to 8 bytes as a number, more as a BigInt its
            // arithmetic cannot mix with numbers.
            let n = bytes[i] as usize;
            assert!(n <= 8, "a {n}-byte long at {i}");
            i += 1 + n;
            continue;
        }
        let Some(&(_, arg)) = VIEWER_OPCODES.iter().find(|(o, _)| *o == op) else {
            panic!("opcode {op:#x} at {} is not one the viewer reads", i - 1);
        };
        i += if arg == -4 {
            4 + u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as usize
        } else {
            arg as usize
        };
        if op == b'.' {
            assert_eq!(i, bytes.len(), "STOP ends the pickle");
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let (_, s) = step_snapshot(1 << 30, 64);
    let good = s.to_pickle().unwrap();
    let err = |b: &[u8]| Snapshot::from_pickle(b).expect_err("bad input").to_string();
    assert!(err(&good[..good.len() / 2]).contains("truncated"));
    assert!(err(b"").contains("empty") || err(b"").contains("truncated"));
    assert!(err(b"{\"segments\": []}").contains("JSON"));
    assert!(err(b"\x80\x02\xff\xfe garbage").contains("not a pickle"));
    // Pickles of other things (protocol 2, as Python writes them).
    let list = b"\x80\x02]q\x00(K\x01K\x02K\x03e.";
    assert!(err(list).contains("list of 3"), "{}", err(list));
    let dict = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01K\x01s.";
    assert!(err(dict).contains("without 'segments'"), "{}", err(dict));
    let wrong = b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01]q\x02}q\x03X\x07\x00\x00\x00addressq\x04X\x01\x00\x00\x00xsas.";
    assert!(err(wrong).contains("segment 0"), "{}", err(wrong));
    let nowhere = std::path::Path::new("/nonexistent-folder/s.pickle");
    let e = s.write(nowhere).expect_err("unwritable").to_string();
    assert!(
        e.contains("cannot write") && e.contains("nonexistent"),
        "{e}"
    );
    let e = Snapshot::read(nowhere).expect_err("missing").to_string();
    assert!(e.contains("cannot read"), "{e}");
}

#[test]
fn a_list_of_segments_reads_as_pytorch_reads_it() {
    let (_, s) = step_snapshot(1 << 30, 64);
    let segs = serde_pickle::to_vec(&s.segments, serde_pickle::SerOptions::new()).unwrap();
    let read = Snapshot::from_pickle(&segs).expect("a list of segments");
    assert_eq!(read.segments, s.segments);
    assert!(read.device_traces.is_empty());
}

#[test]
fn frames_carry_the_tensors_roles_in_rust_only() {
    use crate::Role;
    let (_, s) = step_snapshot(1 << 30, 64);
    let blocks = s.segments.iter().flat_map(|seg| &seg.blocks);
    for f in blocks
        .filter(|b| b.is_active())
        .flat_map(|b| b.frames.iter())
    {
        assert!(f.role.is_some(), "{} has no role", f.name);
    }
    let traced = |s: &Snapshot| -> Vec<Frame> {
        s.device_traces[0]
            .iter()
            .flat_map(|e| e.frames.iter().cloned())
            .collect()
    };
    let a0 = Some(Role::Activation { layer: 0 });
    assert!(traced(&s).iter().any(|f| f.name == "a0" && f.role == a0));
    assert!(
        traced(&s)
            .iter()
            .any(|f| f.name == "x" && f.role == Some(Role::Input))
    );
    // The file is PyTorch's: it has no roles.
    let read = Snapshot::from_pickle(&s.to_pickle().unwrap()).unwrap();
    assert!(traced(&read).iter().all(|f| f.role.is_none()));
    assert_eq!(read, s);
}
