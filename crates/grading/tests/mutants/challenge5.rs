//! Challenge 5's reference solution, rewritten once with a knob per one-edit mistake.

use grading::Setup;
use grading::challenge5::{Answers, MAX_CARDS, Scheme, Terms, largest_share, terms};

// One edit each (`M`), every edit but `None` (`ALL`) and each edit's answers (`variants`).
mutations!(
    RowsWhole,
    RowsFloor,
    DdpNoBuckets,
    DdpBucketsTwice,
    DdpNoActivations,
    ViewOneCopy,
    ViewNoState,
    ViewNoActivations,
    ViewNoHeld,
    ViewNoTemporaries,
    ViewSumOfMoments,
    Zero1StateWhole,
    Zero1TemporariesWhole,
    Zero1EvenShare,
    Zero1NoHeld,
    Zero1NoActivations,
    Zero1OneCopy,
    Zero2TopNoShard,
    Zero2TopNoWhole,
    Zero2TopNoActivations,
    Zero2BottomTwoLayers,
    Zero2BottomFourLayers,
    Zero2UpdateNoHeld,
    Zero2StateWhole,
    Zero2NoBottom,
    Zero2NoUpdate,
    Zero3TopOneLayer,
    Zero3TopThreeLayers,
    Zero3TopNoActivations,
    Zero3BottomTwoLayers,
    Zero3UpdateNoHeld,
    Zero3NoConstruction,
    Zero3ConstructionNoLayer,
    Zero3StateWhole,
    Zero3NoBottom,
    Zero3NoUpdate,
    FewestExclusive,
    FewestLessThan,
    FewestFromTwo,
);

/// `<` for `<=`: they differ only on a card of exactly the fullest card's count, which the
/// grader never asks about (its cards clear each scheme's tolerance either way).
pub const EQUIVALENT: &[M] = &[M::FewestLessThan];

/// Edits the grader does not catch: each moves ZeRO-2's or ZeRO-3's fullest card by one
/// gathered layer or by what the loop holds in the update — less than those schemes'
/// tolerance (10 %, 12.5 %) on every setup where that moment is the busiest (where a layer
/// is that large, the model built whole before sharding is busier still). The tolerance is
/// what the reference itself needs (it is up to 18 % off at 4 hidden layers).
pub const STILL_MISSED: &[M] = {
    use M::*;
    &[
        Zero2BottomTwoLayers,
        Zero2UpdateNoHeld,
        Zero2NoBottom,
        Zero3TopOneLayer,
        Zero3TopThreeLayers,
        Zero3BottomTwoLayers,
        Zero3UpdateNoHeld,
        Zero3ConstructionNoLayer,
    ]
};

fn card_bytes<const E: u8>(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let n = cards;
    let rows = if on(M::RowsWhole) {
        setup.batch
    } else if on(M::RowsFloor) {
        (setup.batch / n).max(1)
    } else {
        setup.batch.div_ceil(n)
    };
    let t = terms(Setup {
        batch: rows,
        ..setup
    });
    let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
    let (acts, held) = (t.activations, t.held_in_update);
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    match scheme {
        Scheme::Ddp if on(M::DdpNoActivations) => 2 * p + state + temps + held + p,
        Scheme::Ddp => {
            t.step_peak + off(M::DdpNoBuckets, p) + if on(M::DdpBucketsTwice) { p } else { 0 }
        }
        Scheme::DdpBucketView => bucket_view::<E>(&t),
        Scheme::Zero1 => zero1::<E>(&t, setup, n),
        Scheme::Zero2 => zero2::<E>(&t, n),
        Scheme::Zero3 => zero3::<E>(&t, n),
        _ => 2 * p + state + acts.max(temps + held),
    }
}

/// DDP with bucket views: the gradients are views of the buckets, one copy fewer.
fn bucket_view<const E: u8>(t: &Terms) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let copies = if on(M::ViewOneCopy) { 1 } else { 2 };
    let (a, u) = (
        off(M::ViewNoActivations, t.activations),
        off(M::ViewNoTemporaries, t.update_temporaries) + off(M::ViewNoHeld, t.held_in_update),
    );
    copies * t.parameters
        + off(M::ViewNoState, t.optimizer_state)
        + if on(M::ViewSumOfMoments) {
            a + u
        } else {
            a.max(u)
        }
}

/// ZeRO-1 on `n` cards: the optimizer's state and its temporaries sharded.
fn zero1<const E: u8>(t: &Terms, setup: Setup, n: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
    let share = if on(M::Zero1EvenShare) {
        p / n
    } else {
        largest_share(setup, n)
    };
    let part = |bytes: u64| bytes / p * share;
    let st = if on(M::Zero1StateWhole) {
        state
    } else {
        part(state)
    };
    let tm = if on(M::Zero1TemporariesWhole) {
        temps
    } else {
        part(temps)
    };
    let copies = if on(M::Zero1OneCopy) { 1 } else { 2 };
    copies * p
        + st
        + off(M::Zero1NoActivations, t.activations).max(tm + off(M::Zero1NoHeld, t.held_in_update))
}

/// ZeRO-2 on `n` cards: the gradients sharded too.
fn zero2<const E: u8>(t: &Terms, n: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let (p, state, temps) = (t.parameters, t.optimizer_state, t.update_temporaries);
    let st = if on(M::Zero2StateWhole) {
        state
    } else {
        state / n
    };
    let top = off(M::Zero2TopNoShard, p / n)
        + off(M::Zero2TopNoWhole, p)
        + st
        + off(M::Zero2TopNoActivations, t.activations);
    let layers = if on(M::Zero2BottomTwoLayers) {
        2
    } else if on(M::Zero2BottomFourLayers) {
        4
    } else {
        3
    };
    let bottom = off(M::Zero2NoBottom, 2 * p / n + st + layers * t.largest_layer);
    let update = off(
        M::Zero2NoUpdate,
        (2 * p + state + temps) / n + off(M::Zero2UpdateNoHeld, t.held_in_update),
    );
    top.max(bottom).max(update)
}

/// ZeRO-3 on `n` cards: the parameters sharded too, each layer gathered when used.
fn zero3<const E: u8>(t: &Terms, n: u64) -> u64 {
    let on = |m: M| E == m as u8;
    let off = |m: M, x: u64| if on(m) { 0 } else { x };
    let (p, state, temps, layer) = (
        t.parameters,
        t.optimizer_state,
        t.update_temporaries,
        t.largest_layer,
    );
    let st = if on(M::Zero3StateWhole) {
        state
    } else {
        state / n
    };
    let gathered = if on(M::Zero3TopOneLayer) {
        1
    } else if on(M::Zero3TopThreeLayers) {
        3
    } else {
        2
    };
    let top = p / n + st + off(M::Zero3TopNoActivations, t.activations) + gathered * layer;
    let bottom_layers = if on(M::Zero3BottomTwoLayers) { 2 } else { 3 };
    let bottom = off(M::Zero3NoBottom, 2 * p / n + st + bottom_layers * layer);
    let update = off(
        M::Zero3NoUpdate,
        (2 * p + state + temps) / n + off(M::Zero3UpdateNoHeld, t.held_in_update),
    );
    let construction = off(
        M::Zero3NoConstruction,
        p + off(M::Zero3ConstructionNoLayer, layer / n),
    );
    top.max(bottom).max(update).max(construction)
}

fn fewest_cards<const E: u8>(setup: Setup, scheme: Scheme, card_capacity: u64) -> Option<u64> {
    let on = |m: M| E == m as u8;
    let last = if on(M::FewestExclusive) {
        MAX_CARDS - 1
    } else {
        MAX_CARDS
    };
    let first = if on(M::FewestFromTwo) { 2 } else { 1 };
    (first..=last).find(|&n| {
        let need = card_bytes::<E>(setup, scheme, n);
        if on(M::FewestLessThan) {
            need < card_capacity
        } else {
            need <= card_capacity
        }
    })
}

/// The answers with edit `E`.
fn answers<const E: u8>() -> Answers {
    Answers {
        card_bytes: card_bytes::<E>,
        fewest_cards: fewest_cards::<E>,
    }
}
