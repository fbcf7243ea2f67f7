//! `Kernels::sgd_foreach` updates every pair as `Kernels::sgd` would: four pairs a dispatch
//! where they are whole quads in one binding each (tails of 1–3 values included), the rest
//! one by one (split buffers, and devices that bind fewer than eight storage buffers).

use gpumem_kernels::{Kernels, Matrix};

use crate::common::*;

const LR: f32 = 0.05;

/// Lengths of the pairs (the lesson's four parameters at width 2000 first, then a fifth
/// for a second dispatch), and whether each is split over buffers.
const PAIRS: [(usize, bool); 6] = [
    (4000, false),
    (2000, false),
    (4000, false),
    (2, false),
    (7, false),
    (40, true),
];

/// Runs `sgd_foreach` on `pairs`; returns the dispatches recorded.
fn check(ctx: &Ctx, name: &str, kernels: &Kernels, pairs: &[(usize, bool)]) -> u64 {
    let mut rng = rng(pairs.len() as u64);
    let host: Vec<(Vec<f32>, Vec<f32>)> = pairs
        .iter()
        .map(|&(n, _)| (rng.vec(n), rng.vec(n)))
        .collect();
    let cuts = |n: usize, split: bool| {
        if split {
            awkward_cuts(4 * n as u64, 4)
        } else {
            Vec::new()
        }
    };
    let stored: Vec<(Stored, Stored)> = host
        .iter()
        .zip(pairs)
        .map(|((p, g), &(n, split))| {
            (
                Stored::new(ctx, p, &cuts(n, split)),
                Stored::new(ctx, g, &cuts(n, split)),
            )
        })
        .collect();
    let parts: Vec<_> = stored.iter().map(|(p, g)| (p.parts(), g.parts())).collect();
    let views: Vec<(Matrix<'_>, Matrix<'_>)> = parts
        .iter()
        .zip(pairs)
        .map(|((p, g), &(n, _))| (matrix(p, 1, n as u64), matrix(g, 1, n as u64)))
        .collect();
    let before = kernels.counters().dispatches;
    ctx.run(|e| kernels.sgd_foreach(e, &views, LR).expect("sgd_foreach"));
    for (i, ((p, g), (sp, _))) in host.iter().zip(&stored).enumerate() {
        let want: Vec<f64> = p
            .iter()
            .zip(g)
            .map(|(&p, &g)| f64::from(p - LR * g))
            .collect();
        assert_close(
            &format!("{name} sgd_foreach pair {i}"),
            &sp.read::<f32>(ctx),
            &want,
        );
    }
    kernels.counters().dispatches - before
}

#[test]
fn every_pair_is_updated() {
    let Some(ctx) = ctx() else { return };
    for (name, kernels) in ctx.all() {
        // The tiny limits' 4 KiB bindings hold 1024 values.
        let pairs: Vec<_> = PAIRS
            .into_iter()
            .filter(|p| device_limits(kernels) || p.0 <= 1024)
            .collect();
        check(ctx, name, kernels, &pairs);
    }
}

/// Kernels of their own: the shared ones' counters see the other tests' dispatches.
#[test]
fn four_pairs_a_dispatch() {
    let Some(ctx) = ctx() else { return };
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    assert_eq!(check(ctx, "own", &own, &PAIRS[..4]), 1);
    // Five whole pairs: two dispatches; a split pair: its own (one per piece).
    assert_eq!(check(ctx, "own", &own, &PAIRS[..5]), 2);
    assert!(check(ctx, "own", &own, &PAIRS) >= 3);
}

#[test]
fn downlevel_devices_update_pair_by_pair() {
    let Some(ctx) = downlevel_ctx() else { return };
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    assert_eq!(check(ctx, "downlevel", &own, &PAIRS[..4]), 4);
}
