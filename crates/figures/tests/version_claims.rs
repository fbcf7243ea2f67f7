//! Claims a domain read found wrong (issue 36, "Claims"), each guarded at its root: the
//! sentence on the page and the engine's number that backs it.

use gpumem::Device;
use gpumem::alloc::EventKind;
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer, OptimizerImpl};
use gpumem::role::Role;

/// A page's text with its line breaks and indents as single spaces.
fn page(name: &str) -> String {
    let text =
        std::fs::read_to_string(figures::book::book_src().join(format!("{name}.md"))).unwrap();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The most bytes of optimizer scratch (`Role::Temporary`) alive at once in two steps, as
/// requested (before the allocator rounds them).
fn most_temporaries(config: &MlpConfig) -> u64 {
    let device = Device::new(&planning_unlimited()).unwrap();
    let mut mlp = Mlp::new(&device, config, 0).unwrap();
    device.start_trace();
    for _ in 0..2 {
        mlp.train_step(Batch::Planned(32)).unwrap();
    }
    let (mut now, mut most) = (0i64, 0i64);
    for e in device.take_trace().events {
        if e.role != Some(Role::Temporary) {
            continue;
        }
        match e.kind {
            EventKind::Alloc => now += e.requested as i64,
            EventKind::Free => now -= e.requested as i64,
            _ => {}
        }
        most = most.max(now);
    }
    most as u64
}

/// Fitting more, Adam's implementations: for-loop Adam holds "two temporaries of that parameter's size at
/// once" (the square root and the division made from it), "twice the largest weight".
#[test]
fn for_loop_adam_holds_two_temporaries_of_the_largest_weight() {
    let mut c = MlpConfig::lesson(2000)
        .with_layers(8)
        .with_optimizer(Optimizer::adam(0.001));
    c.strategy.optimizer_impl = OptimizerImpl::ForLoop;
    let weight = 2000 * 2000 * 4;
    let most = most_temporaries(&c);
    assert!(
        most >= 2 * weight && most < 2 * weight + weight / 100,
        "{most} B of temporaries against a weight of {weight} B"
    );
    assert!(page("fitting-more").contains("two temporaries of that parameter's size at once"));
    for name in ["fitting-more", "networks"] {
        assert!(!page(name).contains("one layer's at a time"), "{name}");
    }
}

/// More than one card: ZeRO-1 deals whole parameters out largest first, each to the card
/// holding the fewest values so far — not "the card that gets the largest weight matrix".
#[test]
fn zero1_deals_largest_first_to_the_least_loaded_card() {
    let text = page("more-than-one-card");
    assert!(text.contains("largest first, each to the card holding the fewest values so far"));
    assert!(!text.contains("card that gets the largest weight matrix"));
}

/// DeepSpeed's estimator: `zero.Init` is opt-in, a construction choice; its `zero_init`
/// argument changes only the CPU figure.
#[test]
fn zero_init_is_a_construction_choice() {
    let text = page("more-than-one-card");
    assert!(text.contains("(opt-in"));
    assert!(text.contains("does not change the GPU figure, only the CPU one"));
    assert!(!text.contains("`zero_init=True`, its default"));
}

/// Monitoring (the core): the reserved peak is not what must fit — the allocator releases its
/// cache and retries before failing, so a step needs between its allocated and reserved peaks
/// (plus memory outside) — and the page names the out-of-memory exception one way, with the
/// versions, as the generated phrase the mini-batching page can share.
#[test]
fn monitoring_says_what_must_fit_and_what_each_version_counts() {
    let text = page("monitoring");
    assert!(!text.contains("the reserved peak is what must fit on the card"));
    assert!(text.contains("*at least* its"));
    assert!(text.contains("*at most* its reserved peak"));
    assert!(text.contains("{{#include generated/monitoring_must_fit.md}}"));
    assert!(text.contains("{{#include generated/oom_exception.md}}"));
    assert!(
        !text.contains("torch.cuda.OutOfMemoryError"),
        "one name on the page"
    );
    let phrase = figures::pages::monitoring::exception::phrase().unwrap();
    assert!(phrase.starts_with("`torch.OutOfMemoryError` (so named since PyTorch 2.4;"));
    assert!(phrase.contains("`torch.cuda.OutOfMemoryError`, the same class, since 1.13"));
    let glossary = page("glossary");
    assert!(!glossary.contains("the card must hold it"));
}
