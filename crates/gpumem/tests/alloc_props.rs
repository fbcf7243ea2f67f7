//! Property tests: thousands of random alloc/free/empty_cache sequences under random
//! allocator settings keep the allocator's books straight, and every backing sees the same
//! sequence of events.

use gpumem::alloc::{AllocError, Allocator, AllocatorConfig, Trace};
use gpumem::device::{Backing, BufferStore, DeviceOptions};
use gpumem::{DType, Device, MemorySpec, Tensor};
use proptest::prelude::*;
use std::rc::Rc;

const MIB: u64 = 1 << 20;

#[derive(Debug, Clone)]
enum Op {
    Alloc(u64),
    /// Free the live block at this index (modulo the number alive).
    Free(usize),
    EmptyCache,
}

/// Request sizes spread over both pools and all three segment-size rules.
fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 1..4096u64,
        3 => 4096..MIB,
        2 => MIB..10 * MIB,
        2 => 10 * MIB..90 * MIB,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => size().prop_map(Op::Alloc),
        5 => any::<usize>().prop_map(Op::Free),
        1 => Just(Op::EmptyCache),
    ]
}

fn config() -> impl Strategy<Value = AllocatorConfig> {
    (
        (
            64 * MIB..1024 * MIB,
            prop::option::of(21 * MIB..200 * MIB),
            prop::option::of(0.05..0.95f64),
            prop::bool::weighted(0.85),
        ),
        (
            prop::option::weighted(0.3, 0.2..=1.0f64),
            prop::bool::weighted(0.35),
            prop_oneof![3 => Just(0u64), 1 => 0..32 * MIB],
        ),
    )
        .prop_map(
            |((capacity, max_split_size, gc_threshold, caching), (fraction, expandable, ctx))| {
                AllocatorConfig {
                    capacity: Some(capacity),
                    max_split_size,
                    gc_threshold,
                    caching,
                    memory_fraction: fraction,
                    expandable_segments: expandable,
                    context_memory: ctx,
                }
            },
        )
}

/// The most the allocator may reserve: the card less what is held outside it, and no
/// more than the memory fraction allows — except that, as in PyTorch, the fraction is
/// checked against the request's segment size while an expandable segment maps whole
/// 20 MiB pages, so it may pass the fraction by less than a page.
fn limit(config: &AllocatorConfig, slack: u64) -> u64 {
    let cap = config.capacity.unwrap() - config.context_memory;
    config.allowed().map_or(cap, |a| (a + slack).min(cap))
}

/// How far past the fraction an expandable segment may map.
fn page_slack(config: &AllocatorConfig) -> u64 {
    if config.expandable_segments {
        gpumem::alloc::LARGE_BUFFER - 1
    } else {
        0
    }
}

/// Every invariant the allocator promises, checked against its block table.
fn check(a: &Allocator<Backing>, cap: u64) -> Result<(), TestCaseError> {
    let (allocated, reserved) = (a.allocated(), a.reserved());
    prop_assert!(
        allocated <= reserved,
        "allocated {allocated} > reserved {reserved}"
    );
    prop_assert!(reserved <= cap, "reserved {reserved} > limit {cap}");
    let r = a.recount();
    let s = a.stats();
    prop_assert_eq!(r.allocated, allocated);
    prop_assert_eq!(r.reserved, reserved);
    prop_assert_eq!(r.requested, s.requested_bytes.all.current);
    prop_assert_eq!(r.allocations, s.allocation.all.current);
    prop_assert_eq!(r.segments, s.segment.all.current);
    prop_assert_eq!(
        s.allocated_bytes.all.current,
        s.allocated_bytes.small_pool.current
            + s.allocated_bytes.large_pool.current
            + if a.config().caching { 0 } else { allocated }
    );
    prop_assert!(s.allocated_bytes.all.peak >= allocated);
    // Blocks tile their segments and live blocks never overlap.
    let blocks = a.snapshot();
    for w in blocks.windows(2) {
        prop_assert!(
            w[0].addr + w[0].size <= w[1].addr,
            "overlap: {:?} {:?}",
            w[0],
            w[1]
        );
        // Expandable segments may have unmapped pages between mapped blocks.
        let touching = w[0].addr + w[0].size == w[1].addr;
        if w[0].segment == w[1].segment && (touching || !a.config().expandable_segments) {
            prop_assert!(touching, "gap inside a segment");
            prop_assert!(
                w[0].allocated || w[1].allocated,
                "two free neighbours were not merged"
            );
        }
    }
    for b in blocks.iter().filter(|b| b.allocated) {
        prop_assert!(b.size >= b.requested && b.size % 512 == 0);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_books_always_balance(config in config(), ops in prop::collection::vec(op(), 1..60)) {
        let cap = limit(&config, page_slack(&config));
        let strict = limit(&config, 0);
        let mut a = Allocator::new(Backing::Plan, config.clone()).unwrap();
        let mut live = Vec::new();
        for op in &ops {
            match *op {
                Op::Alloc(n) => match a.malloc(n, "t") {
                    Ok(b) => live.push(b),
                    Err(AllocError::OutOfMemory(e)) => {
                        // Out of memory only when the request really does not fit (an
                        // expandable segment maps whole pages).
                        let page = if config.expandable_segments && config.caching {
                            gpumem::alloc::page_size(gpumem::alloc::pool_for(e.tried))
                        } else {
                            1
                        };
                        prop_assert!(e.reserved + e.tried.next_multiple_of(page) > strict);
                    }
                    Err(e) => prop_assert!(false, "unexpected error {e}"),
                },
                Op::Free(i) if !live.is_empty() => {
                    let b = live.swap_remove(i % live.len());
                    a.free(b).unwrap();
                }
                Op::Free(_) => {}
                Op::EmptyCache => a.empty_cache(),
            }
            check(&a, cap)?;
        }
        for b in live.drain(..) {
            a.free(b).unwrap();
        }
        check(&a, cap)?;
        prop_assert_eq!(a.allocated(), 0);
        a.empty_cache();
        prop_assert_eq!(a.reserved(), 0);
        if !config.expandable_segments {
            prop_assert_eq!(a.stats().num_device_alloc, a.stats().num_device_free);
        }
    }
}

/// Runs `ops` through tensors on `dev` and returns the recorded trace.
fn run_on(dev: &Device, ops: &[Op]) -> Trace {
    dev.start_trace();
    let mut live = Vec::new();
    for op in ops {
        match *op {
            // float16 tensors of n/2 elements: any even byte count.
            Op::Alloc(n) => {
                if let Ok(t) = Tensor::new(
                    dev,
                    (n / 2).max(1),
                    1,
                    DType::F16,
                    gpumem::Role::Temporary,
                    "t",
                ) {
                    live.push(t);
                }
            }
            Op::Free(i) if !live.is_empty() => {
                live.swap_remove(i % live.len());
            }
            Op::Free(_) => {}
            Op::EmptyCache => dev.empty_cache(),
        }
    }
    drop(live);
    dev.empty_cache();
    dev.take_trace()
}

fn device(backing: Backing, config: &AllocatorConfig) -> Device {
    let options = DeviceOptions {
        memory: MemorySpec::Bytes(config.capacity.unwrap()),
        allocator: config.clone(),
        ..Default::default()
    };
    Device::with_backing(backing, "test".into(), "test".into(), &options).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn plan_and_cpu_see_the_same_events(config in config(), ops in prop::collection::vec(op(), 1..40)) {
        let plan = run_on(&device(Backing::Plan, &config), &ops);
        let cpu = run_on(&device(Backing::Cpu(Default::default()), &config), &ops);
        prop_assert_eq!(plan, cpu);
    }
}

/// Real buffers are slower to make: fewer, shorter sequences on wgpu, all on one device.
#[test]
fn wgpu_sees_the_same_events_as_plan() {
    let Some(gpu) = gpumem_kernels::testing::gpu().map(Rc::new) else {
        return;
    };
    let base = BufferStore::new(gpu);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 24,
        ..ProptestConfig::default()
    });
    let strategy = (config(), prop::collection::vec(op(), 1..25));
    runner
        .run(&strategy, |(config, ops)| {
            let plan = run_on(&device(Backing::Plan, &config), &ops);
            let store = base.fresh();
            let wgpu = run_on(&device(Backing::Wgpu(store), &config), &ops);
            prop_assert_eq!(plan, wgpu);
            Ok(())
        })
        .unwrap();
}
