//! The allocator's rules pinned with hand-computed byte counts.

use super::*;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// A store that holds nothing but can refuse: after `limit` bytes (a driver running out),
/// or always with a fatal error (a lost device).
#[derive(Default)]
struct TestStore {
    live: BTreeMap<u64, u64>,
    limit: Option<u64>,
    lost: bool,
}

impl SegmentStore for TestStore {
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError> {
        if self.lost {
            return Err(StoreError::Fatal("device lost".into()));
        }
        let used: u64 = self.live.values().sum();
        if self.limit.is_some_and(|l| used + bytes > l) {
            return Err(StoreError::OutOfMemory(
                "driver: out of device memory".into(),
            ));
        }
        self.live.insert(id, bytes);
        Ok(())
    }
    fn release_segment(&mut self, id: u64) {
        self.live.remove(&id).expect("released a live segment");
    }
    fn map_pages(&mut self, id: u64, _: u64, bytes: u64, _: u64) -> Result<(), StoreError> {
        let used: u64 = self.live.values().sum();
        if self.limit.is_some_and(|l| used + bytes > l) {
            return Err(StoreError::OutOfMemory("driver: no more pages".into()));
        }
        *self.live.entry(id).or_default() += bytes;
        Ok(())
    }
    fn unmap_pages(&mut self, id: u64, _: u64, bytes: u64) {
        *self.live.get_mut(&id).expect("unmapped a live segment") -= bytes;
    }
}

fn alloc(config: AllocatorConfig) -> Allocator<TestStore> {
    Allocator::new(TestStore::default(), config).unwrap()
}

fn caching() -> Allocator<TestStore> {
    alloc(AllocatorConfig::default())
}

fn with_capacity(cap: u64) -> AllocatorConfig {
    AllocatorConfig {
        capacity: Some(cap),
        ..Default::default()
    }
}

fn oom(r: Result<BlockAddr, AllocError>) -> OutOfMemory {
    match r {
        Err(AllocError::OutOfMemory(o)) => *o,
        other => panic!("expected out-of-memory, got {other:?}"),
    }
}

#[test]
fn requests_round_up_to_512_bytes() {
    assert_eq!(round_size(0), Some(512));
    assert_eq!(round_size(1), Some(512));
    assert_eq!(round_size(512), Some(512));
    assert_eq!(round_size(513), Some(1024));
    assert_eq!(round_size(u64::MAX), None);
    let mut a = caching();
    a.malloc(1, "x").unwrap();
    assert_eq!(a.allocated(), 512);
    assert_eq!(a.stats().requested_bytes.all.current, 1);
}

#[test]
fn a_small_request_reserves_a_2_mib_segment() {
    let mut a = caching();
    a.malloc(4000, "bias").unwrap();
    assert_eq!(a.allocated(), 4096);
    assert_eq!(a.reserved(), 2 * MIB);
    assert_eq!(a.stats().reserved_bytes.small_pool.current, 2 * MIB);
    // A second small request is carved from the same segment.
    a.malloc(1000, "bias2").unwrap();
    assert_eq!(a.allocated(), 4096 + 1024);
    assert_eq!(a.reserved(), 2 * MIB);
    assert_eq!(a.stats().segment.all.current, 1);
}

#[test]
fn pools_and_segment_sizes() {
    assert_eq!(pool_for(MIB), Pool::Small);
    assert_eq!(pool_for(MIB + 512), Pool::Large);
    assert_eq!(segment_size(MIB), Some(2 * MIB));
    assert_eq!(segment_size(MIB + 512), Some(20 * MIB));
    assert_eq!(segment_size(10 * MIB - 512), Some(20 * MIB));
    assert_eq!(segment_size(10 * MIB), Some(10 * MIB));
    assert_eq!(segment_size(10 * MIB + 512), Some(12 * MIB));

    // 1 MiB exactly is still small: it fills half a 2 MiB segment.
    let mut a = caching();
    a.malloc(MIB, "a").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (MIB, 2 * MIB));

    // Just over 1 MiB is large: a 20 MiB segment, split.
    let mut a = caching();
    a.malloc(MIB + 1, "a").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (MIB + 512, 20 * MIB));
    assert_eq!(
        a.stats().inactive_split_bytes.all.current,
        20 * MIB - MIB - 512
    );
}

#[test]
fn a_large_block_is_not_split_when_at_most_1_mib_would_be_left() {
    // 11 MiB rounds to a 12 MiB segment; the 1 MiB left is not worth a block, so the
    // tensor's block is the whole segment and memory_allocated counts all 12 MiB.
    let mut a = caching();
    a.malloc(11 * MIB, "w").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (12 * MIB, 12 * MIB));
    assert_eq!(a.stats().requested_bytes.all.current, 11 * MIB);
    // 10.5 MiB: the 1.5 MiB left is split off.
    let mut a = caching();
    a.malloc(10 * MIB + 512 * KIB, "w").unwrap();
    assert_eq!(
        (a.allocated(), a.reserved()),
        (10 * MIB + 512 * KIB, 12 * MIB)
    );
}

#[test]
fn freed_blocks_are_cached_and_reused_best_fit() {
    let mut a = caching();
    let x = a.malloc(30 * MIB, "x").unwrap();
    let y = a.malloc(40 * MIB, "y").unwrap();
    a.free(x).unwrap();
    a.free(y).unwrap();
    assert_eq!((a.allocated(), a.reserved()), (0, 70 * MIB));
    // 25 MiB fits both cached blocks; best fit takes the 30 MiB one.
    let z = a.malloc(25 * MIB, "z").unwrap();
    assert_eq!(a.placement(z).unwrap().segment, 0);
    assert_eq!(a.reserved(), 70 * MIB);
    assert_eq!(a.stats().num_device_alloc, 2);
}

#[test]
fn neighbours_merge_and_empty_cache_returns_everything() {
    let mut a = caching();
    let b1 = a.malloc(100 * KIB, "1").unwrap();
    let b2 = a.malloc(100 * KIB, "2").unwrap();
    let b3 = a.malloc(100 * KIB, "3").unwrap();
    assert_eq!(a.stats().segment.all.current, 1);
    a.free(b1).unwrap();
    a.free(b3).unwrap();
    // b3 merged with the free tail of the segment; b1 is alone.
    assert_eq!(a.largest_free_block(), 2 * MIB - 200 * KIB);
    a.free(b2).unwrap();
    assert_eq!(a.largest_free_block(), 2 * MIB);
    assert_eq!(a.stats().inactive_split.all.current, 0);
    a.empty_cache();
    assert_eq!((a.allocated(), a.reserved()), (0, 0));
    assert_eq!(a.stats().num_device_free, 1);
}

#[test]
fn max_split_size_keeps_oversize_blocks_whole() {
    let cfg = AllocatorConfig {
        max_split_size: Some(32 * MIB),
        ..Default::default()
    };
    // Without the setting a 12 MiB request is carved from a cached 40 MiB block.
    let mut plain = caching();
    let big = plain.malloc(40 * MIB, "big").unwrap();
    plain.free(big).unwrap();
    plain.malloc(12 * MIB, "small").unwrap();
    assert_eq!(plain.reserved(), 40 * MIB);
    // With it, the oversize block is left alone and a new segment is taken.
    let mut a = alloc(cfg.clone());
    let big = a.malloc(40 * MIB, "big").unwrap();
    a.free(big).unwrap();
    a.malloc(12 * MIB, "small").unwrap();
    assert_eq!(a.reserved(), 52 * MIB);
    // A request at or above the limit takes a larger cached block whole (no split)
    // when less than 20 MiB would be wasted.
    let mut a = alloc(cfg);
    let big = a.malloc(50 * MIB, "big").unwrap();
    a.free(big).unwrap();
    a.malloc(40 * MIB, "next").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (50 * MIB, 50 * MIB));
    assert_eq!(a.stats().oversize_allocations.current, 1);
    assert_eq!(a.stats().oversize_segments.current, 1);
}

#[test]
fn max_split_size_is_at_least_20_mib() {
    let with = |m| AllocatorConfig {
        max_split_size: Some(m),
        ..Default::default()
    };
    assert!(matches!(
        Allocator::new(TestStore::default(), with(20 * MIB - 512)),
        Err(ConfigError::MaxSplitTooSmall(..))
    ));
    assert!(Allocator::new(TestStore::default(), with(20 * MIB)).is_ok());
    for t in [0.0, 1.0, 1.5, -0.1, f64::NAN] {
        let bad = AllocatorConfig {
            gc_threshold: Some(t),
            capacity: Some(MIB),
            ..Default::default()
        };
        assert!(Allocator::new(TestStore::default(), bad).is_err(), "{t}");
    }
}

#[test]
fn frees_the_cache_and_retries_before_running_out() {
    let mut a = alloc(with_capacity(64 * MIB));
    let x = a.malloc(40 * MIB, "x").unwrap();
    a.free(x).unwrap();
    // 40 cached + 50 new > 64: the cache is given back and the retry succeeds.
    a.malloc(50 * MIB, "y").unwrap();
    assert_eq!(a.stats().num_alloc_retries, 1);
    assert_eq!((a.allocated(), a.reserved()), (50 * MIB, 50 * MIB));
    // Now nothing is cached: 50 + 30 > 64 is out of memory.
    let e = oom(a.malloc(30 * MIB, "z"));
    assert_eq!(e.requested, 30 * MIB);
    assert_eq!(e.tried, 30 * MIB);
    assert_eq!(e.capacity, Some(64 * MIB));
    assert_eq!(e.allocated, 50 * MIB);
    assert_eq!(e.reserved, 50 * MIB);
    assert_eq!(e.free, Some(14 * MIB));
    assert_eq!(e.cause, OomCause::Capacity);
    assert!(!e.is_fragmentation());
    assert_eq!(a.stats().num_ooms, 1);
    assert_eq!(a.stats().num_alloc_retries, 2);
    // The failed request left the allocator as it was.
    assert_eq!((a.allocated(), a.reserved()), (50 * MIB, 50 * MIB));
}

#[test]
fn out_of_memory_reads_like_pytorch() {
    let mut a = alloc(with_capacity(64 * MIB));
    a.malloc(50 * MIB, "y").unwrap();
    let mut e = oom(a.malloc(30 * MIB, "z"));
    e.device = "GPU 0".into();
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "out of memory. Tried to allocate 30.00 MiB (GPU 0; 64.00 MiB total capacity; \
             50.00 MiB already allocated; 14.00 MiB free; 50.00 MiB reserved in total by gpumem)"
        ),
        "{msg}"
    );
    assert!(msg.contains("smaller batch"), "{msg}");
    assert!(!msg.contains("fragmented"), "{msg}");
}

/// The fragmentation case: a request fails although the cache holds more free bytes than
/// it asks for, because those bytes are in pieces of a split segment. With
/// `max_split_size` the same sequence succeeds.
#[test]
fn fragmentation_fails_without_max_split_size_and_succeeds_with_it() {
    fn run(max_split_size: Option<u64>) -> (Allocator<TestStore>, Result<BlockAddr, AllocError>) {
        let mut a = alloc(AllocatorConfig {
            capacity: Some(80 * MIB),
            max_split_size,
            ..Default::default()
        });
        let x = a.malloc(60 * MIB, "x").unwrap();
        a.free(x).unwrap();
        let p = a.malloc(20 * MIB, "a").unwrap();
        let _q = a.malloc(20 * MIB, "b").unwrap();
        let r = a.malloc(20 * MIB, "c").unwrap();
        a.free(p).unwrap();
        a.free(r).unwrap();
        let result = a.malloc(30 * MIB, "d");
        (a, result)
    }
    let (a, r) = run(None);
    let e = oom(r);
    assert_eq!((e.allocated, e.reserved), (20 * MIB, 60 * MIB));
    assert!(e.reserved - e.allocated > e.requested);
    assert!(e.is_fragmentation());
    assert!(e.to_string().contains("try max_split_size"));
    assert_eq!(a.segment_sizes(), vec![60 * MIB]);

    let (a, r) = run(Some(24 * MIB));
    r.expect("with max_split_size the oversize block was never split");
    assert_eq!(a.allocated(), 50 * MIB);
}

#[test]
fn garbage_collection_gives_back_old_cached_segments() {
    // The threshold is a fraction of what the memory fraction allows, and without a
    // fraction PyTorch never collects.
    let cfg = AllocatorConfig {
        capacity: Some(100 * MIB),
        gc_threshold: Some(0.5),
        memory_fraction: Some(1.0),
        ..Default::default()
    };
    let run = |cfg: AllocatorConfig| {
        let mut a = alloc(cfg);
        let x = a.malloc(30 * MIB, "x").unwrap();
        let y = a.malloc(30 * MIB, "y").unwrap();
        a.free(x).unwrap();
        a.free(y).unwrap();
        a.malloc(40 * MIB, "z").unwrap();
        a
    };
    // Reserved (60 MiB) is over half the card: both cached segments go back first.
    let a = run(cfg.clone());
    assert_eq!(a.reserved(), 40 * MIB);
    assert_eq!(a.stats().num_device_free, 2);
    assert_eq!(a.stats().num_alloc_retries, 0);
    // Without it they stay cached (the card still has room).
    let a = run(with_capacity(100 * MIB));
    assert_eq!(a.reserved(), 100 * MIB);
    // A threshold alone does nothing, as in PyTorch.
    let a = run(AllocatorConfig {
        memory_fraction: None,
        ..cfg.clone()
    });
    assert_eq!(a.reserved(), 100 * MIB);
    // With a fraction of 0.8 (80 MiB allowed) the threshold is 40 MiB: still both go.
    let a = run(AllocatorConfig {
        memory_fraction: Some(0.8),
        ..cfg
    });
    assert_eq!(a.reserved(), 40 * MIB);
}

#[test]
fn caching_off_returns_each_segment_on_free() {
    let mut a = alloc(AllocatorConfig {
        caching: false,
        ..Default::default()
    });
    let x = a.malloc(1, "x").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (512, 512));
    let y = a.malloc(3 * MIB, "y").unwrap();
    assert_eq!(a.reserved(), 512 + 3 * MIB);
    a.free(x).unwrap();
    a.free(y).unwrap();
    assert_eq!((a.allocated(), a.reserved()), (0, 0));
    assert_eq!(a.stats().num_device_alloc, 2);
    assert_eq!(a.stats().num_device_free, 2);
}

#[test]
fn a_driver_refusal_is_retried_then_reported() {
    let mut a = Allocator::new(
        TestStore {
            limit: Some(50 * MIB),
            ..Default::default()
        },
        AllocatorConfig::default(),
    )
    .unwrap();
    let x = a.malloc(40 * MIB, "x").unwrap();
    a.free(x).unwrap();
    a.malloc(45 * MIB, "y").unwrap();
    assert_eq!(a.stats().num_alloc_retries, 1);
    let e = oom(a.malloc(10 * MIB, "z"));
    assert_eq!(e.capacity, None);
    assert_eq!(
        e.cause,
        OomCause::Backing("driver: out of device memory".into())
    );
    assert!(e.to_string().contains("unknown total capacity"), "{e}");
}

#[test]
fn a_lost_device_is_not_out_of_memory() {
    let mut a = Allocator::new(
        TestStore {
            lost: true,
            ..Default::default()
        },
        AllocatorConfig::default(),
    )
    .unwrap();
    assert!(matches!(a.malloc(1, "x"), Err(AllocError::Device(_))));
    assert_eq!(a.stats().num_ooms, 0);
}

#[test]
fn bad_requests_are_errors() {
    let mut a = caching();
    assert!(matches!(
        a.malloc(u64::MAX, "x"),
        Err(AllocError::TooLarge(_))
    ));
    assert!(matches!(
        a.malloc(u64::MAX - 1000, "x"),
        Err(AllocError::TooLarge(_))
    ));
    assert!(a.free(BlockAddr(12345)).is_err());
    let b = a.malloc(10, "x").unwrap();
    a.free(b).unwrap();
    assert!(a.free(b).is_err(), "double free is refused");
}

#[test]
fn the_trace_records_every_event_with_totals() {
    let mut a = caching();
    a.start_trace();
    let b = a.malloc(1000, "bias").unwrap();
    a.free(b).unwrap();
    a.empty_cache();
    let t = a.take_trace();
    let kinds: Vec<_> = t.events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::SegmentAlloc,
            EventKind::Alloc,
            EventKind::Free,
            EventKind::SegmentFree
        ]
    );
    assert_eq!(t.events[1].size, 1024);
    assert_eq!(t.events[1].requested, 1000);
    assert_eq!(t.events[1].label, "bias");
    assert_eq!(
        (t.events[1].allocated, t.events[1].reserved),
        (1024, 2 * MIB)
    );
    assert_eq!(t.peak_reserved(), 2 * MIB);
    let back = Trace::from_json(&t.to_json()).unwrap();
    assert_eq!(back, t);
}

/// `inactive_split` changes once per call by the net amount, as PyTorch's `malloc` and
/// `free_block` do, so its running totals (`allocated`, `freed`) are PyTorch's too.
#[test]
fn inactive_split_totals_change_by_the_net_amount() {
    let mut a = caching();
    let first = a.malloc(1, "first").unwrap();
    // A whole 2 MiB segment is split: a new inactive split block of the rest.
    let rest = 2 * MIB - 512;
    let split = |a: &Allocator<TestStore>| {
        let s = a.stats();
        (s.inactive_split.all, s.inactive_split_bytes.all)
    };
    let (count, bytes) = split(&a);
    assert_eq!((count.current, count.allocated, count.freed), (1, 1, 0));
    assert_eq!(
        (bytes.current, bytes.allocated, bytes.freed),
        (rest, rest, 0)
    );
    // The split block shrinks by 512 bytes: no block appears or goes.
    let second = a.malloc(1, "second").unwrap();
    let (count, bytes) = split(&a);
    assert_eq!((count.current, count.allocated, count.freed), (1, 1, 0));
    assert_eq!(
        (bytes.current, bytes.allocated, bytes.freed),
        (rest - 512, rest, 512)
    );
    // Freeing the second merges it into the free rest: the segment is still split, the
    // split block grows by 512 bytes.
    a.free(second).unwrap();
    let (count, bytes) = split(&a);
    assert_eq!((count.current, count.allocated, count.freed), (1, 1, 0));
    assert_eq!(
        (bytes.current, bytes.allocated, bytes.freed),
        (rest, rest + 512, 512)
    );
    // Freeing the first makes the segment whole again: the split block goes.
    a.free(first).unwrap();
    let (count, bytes) = split(&a);
    assert_eq!((count.current, count.allocated, count.freed), (0, 1, 1));
    assert_eq!((bytes.current, bytes.freed), (0, rest + 512));
}

mod expandable;
mod fraction;
mod fragmentation;
