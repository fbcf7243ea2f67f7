//! The lesson's card against PyTorch's own order of allocations: PyTorch 1.12's defaults
//! (`zero_grad()` zeroes, optimizers loop), traced storage by storage by
//! `reference/pytorch/step_peaks.py --trace-lesson-card` (FakeTensorMode, two steps of the
//! lesson's loop), replayed through the engine's caching allocator on the lesson's card. The
//! boundaries the engine finds there — Challenge 1's largest full batch, Challenge 2's deepest
//! networks — must be where PyTorch's own sequence fits and one row or layer more does not,
//! with the same peaks as the engine's step.

use gpumem::alloc::{AllocError, Allocator, AllocatorConfig, BlockAddr, SegmentStore, StoreError};
use gpumem::lesson::{CARD_BYTES, Card, planning_on};
use gpumem::measure::{StepMemory, measure_step};
use gpumem::mlp::{MlpConfig, Optimizer};
use std::collections::HashMap;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../reference/pytorch/trace_lesson_card.txt"
);

/// A store with no limit of its own: the allocator's capacity is the card.
struct Unlimited;

impl SegmentStore for Unlimited {
    fn create_segment(&mut self, _: u64, _: u64) -> Result<(), StoreError> {
        Ok(())
    }
    fn release_segment(&mut self, _: u64) {}
}

/// One storage's birth (`+`, bytes, name) or death (`-`), by PyTorch's tensor number.
enum Event {
    Alloc(u64, u64, String),
    Free(u64),
}

/// The trace's setups, by name, each its events in order.
fn setups() -> Vec<(String, Vec<Event>)> {
    let text = std::fs::read_to_string(TRACE).expect("the committed trace");
    let mut out: Vec<(String, Vec<Event>)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("==== ") {
            out.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let t = line.trim_start();
        let Some(events) = out.last_mut().map(|(_, e)| e) else {
            continue;
        };
        let number = |w: &str| w.trim_start_matches('t').parse::<u64>().expect("tN");
        let words: Vec<&str> = t.split_whitespace().collect();
        match words.as_slice() {
            ["+", id, _shape, bytes, "B", "from", from, ..] => {
                let name = from.split_once('=').map_or("", |(_, n)| n).to_string();
                events.push(Event::Alloc(number(id), bytes.parse().unwrap(), name));
            }
            ["-", id, ..] => events.push(Event::Free(number(id))),
            _ => {}
        }
    }
    out
}

/// What replaying a setup's events on the lesson's card gave: its peaks, or the failure.
#[derive(Debug, PartialEq)]
struct Replay {
    peak_allocated: u64,
    peak_reserved: u64,
    fits: bool,
}

/// Replays `events` through a caching allocator on the lesson's card. Non-fused Adam's step
/// counts are skipped: under CUDA PyTorch keeps them on the CPU.
fn replay(events: &[Event]) -> Replay {
    let config = AllocatorConfig {
        capacity: Some(CARD_BYTES),
        context_memory: Card::Lesson.outside(),
        ..Default::default()
    };
    let mut a = Allocator::new(Unlimited, config).unwrap();
    let mut live: HashMap<u64, BlockAddr> = HashMap::new();
    for e in events {
        match e {
            Event::Alloc(_, 0, _) => {}
            Event::Alloc(_, _, name) if name.ends_with(".step") => {}
            Event::Alloc(id, bytes, name) => match a.malloc(*bytes, name) {
                Ok(block) => {
                    live.insert(*id, block);
                }
                Err(AllocError::OutOfMemory(_)) => {
                    return Replay {
                        peak_allocated: a.stats().allocated_bytes.all.peak,
                        peak_reserved: a.stats().reserved_bytes.all.peak,
                        fits: false,
                    };
                }
                Err(e) => panic!("{e}"),
            },
            Event::Free(id) => {
                if let Some(block) = live.remove(id) {
                    a.free(block).unwrap();
                }
            }
        }
    }
    Replay {
        peak_allocated: a.stats().allocated_bytes.all.peak,
        peak_reserved: a.stats().reserved_bytes.all.peak,
        fits: true,
    }
}

/// The engine's network for a setup name such as `2-5000x81-2/b32/adam/forloop/zerograd-zero`,
/// as the lesson's card's PyTorch runs it.
fn config(name: &str) -> (MlpConfig, u64) {
    let mut parts = name.split('/');
    let net = parts.next().unwrap();
    let batch: u64 = parts
        .next()
        .unwrap()
        .trim_start_matches('b')
        .parse()
        .unwrap();
    let optimizer = match parts.next().unwrap() {
        "adam" => Optimizer::adam(0.001),
        _ => Optimizer::LESSON,
    };
    let dims: Vec<&str> = net.split('-').collect();
    let (width, layers) = dims[1].split_once('x').unwrap();
    let mut c = MlpConfig::lesson(width.parse().unwrap())
        .with_layers(layers.parse().unwrap())
        .with_optimizer(optimizer);
    c.inputs = dims[0].parse().unwrap();
    c.classes = dims[2].parse().unwrap();
    (Card::Lesson.config(&c), batch)
}

fn engine(config: &MlpConfig, batch: u64) -> StepMemory {
    measure_step(&planning_on(Card::Lesson), config, batch, 0).unwrap()
}

#[test]
fn pytorchs_own_order_gives_the_lesson_cards_boundaries() {
    let setups = setups();
    assert_eq!(setups.len(), 6, "three boundaries, either side of each");
    for pair in setups.chunks(2) {
        let [(fit_name, fit_events), (over_name, over_events)] = pair else {
            unreachable!()
        };
        let (fit, over) = (replay(fit_events), replay(over_events));
        assert!(
            fit.fits,
            "{fit_name}: PyTorch's order does not fit: {fit:?}"
        );
        assert!(!over.fits, "{over_name}: PyTorch's order fits: {over:?}");
        // The engine agrees on both sides, and at the boundary its step peaks as PyTorch's
        // sequence does under the same allocator.
        let (config, batch) = config(fit_name);
        let m = engine(&config, batch);
        assert!(m.fits(), "{fit_name}: the engine runs out");
        assert_eq!(
            (m.peak_allocated, m.peak_reserved),
            (fit.peak_allocated, fit.peak_reserved),
            "{fit_name}"
        );
        let (config, batch) = self::config(over_name);
        assert!(
            !engine(&config, batch).fits(),
            "{over_name}: the engine fits"
        );
    }
}

/// The traces were made with the lesson's card's PyTorch defaults: each setup's name says how
/// `zero_grad()` and the optimizer ran, and that must be what the card runs now (else the
/// traces are stale: rerun `step_peaks.py --trace-lesson-card`).
#[test]
fn the_traces_ran_the_lesson_cards_pytorch_defaults() {
    use gpumem::mlp::{OptimizerImpl, ZeroGrad};
    let card = Card::Lesson.config(&MlpConfig::lesson(1)).strategy;
    for (name, _) in setups() {
        let zero_grad = if name.contains("zerograd-zero") {
            ZeroGrad::Zero
        } else {
            ZeroGrad::SetToNone
        };
        let loops = if name.contains("forloop") {
            OptimizerImpl::ForLoop
        } else {
            OptimizerImpl::Foreach
        };
        assert_eq!(
            (card.zero_grad, card.optimizer_impl),
            (zero_grad, loops),
            "{name}"
        );
    }
}
