//! The per-process memory fraction and memory outside the allocator, in hand-computed bytes.

use super::*;

#[test]
fn a_memory_fraction_caps_what_the_allocator_may_reserve() {
    // Half of a 100 MiB card: 50 MiB allowed (`allowed_memory_maximum`).
    let mut a = alloc(AllocatorConfig {
        memory_fraction: Some(0.5),
        ..with_capacity(100 * MIB)
    });
    assert_eq!(a.config().allowed(), Some(50 * MIB));
    a.malloc(30 * MIB, "x").unwrap();
    // 30 + 30 MiB is more than allowed though the card has room: out of memory, with the
    // card's own free figure.
    let e = oom(a.malloc(30 * MIB, "y"));
    assert_eq!(
        (e.reserved, e.tried, e.free),
        (30 * MIB, 30 * MIB, Some(70 * MIB))
    );
    // What fits under the fraction still works.
    a.malloc(20 * MIB, "z").unwrap();
    assert_eq!(a.reserved(), 50 * MIB);
    // A fraction of 0 refuses everything, as PyTorch's does.
    let mut none = alloc(AllocatorConfig {
        memory_fraction: Some(0.0),
        ..with_capacity(100 * MIB)
    });
    oom(none.malloc(1, "x"));
}

#[test]
fn fractions_outside_zero_to_one_are_refused() {
    for f in [-0.1, 1.5, f64::NAN] {
        let bad = AllocatorConfig {
            memory_fraction: Some(f),
            ..with_capacity(100 * MIB)
        };
        assert!(
            matches!(bad.validate(), Err(ConfigError::FractionRange(_))),
            "{f}"
        );
    }
    let no_card = AllocatorConfig {
        memory_fraction: Some(0.5),
        ..Default::default()
    };
    assert_eq!(no_card.validate(), Err(ConfigError::FractionNeedsCapacity));
}

#[test]
fn memory_outside_the_allocator_leaves_less_of_the_card() {
    // A 100 MiB card with 30 MiB held by the context: 70 MiB for the allocator.
    let mut a = alloc(AllocatorConfig {
        context_memory: 30 * MIB,
        ..with_capacity(100 * MIB)
    });
    a.malloc(60 * MIB, "x").unwrap();
    assert_eq!(a.free_on_device(), Some(10 * MIB));
    let e = oom(a.malloc(20 * MIB, "y"));
    assert_eq!((e.reserved, e.free), (60 * MIB, Some(10 * MIB)));
    let too_much = AllocatorConfig {
        context_memory: 101 * MIB,
        ..with_capacity(100 * MIB)
    };
    assert!(matches!(
        too_much.validate(),
        Err(ConfigError::ContextTooLarge(..))
    ));
}
