//! `Kernels::adam_with_denom` writes the step and foreach Adam's denominator as
//! `Kernels::adam` then `Kernels::adam_denom` would: one dispatch for whole-quad float32
//! tensors (tails of 1–3 values included), the two kernels for split tensors and on
//! devices that bind fewer than five storage buffers.

use gpumem_kernels::optim_fused::AdamTensors;
use gpumem_kernels::{Adam, Kernels};

use crate::common::*;

const EPS_DENOM: f64 = 1e-8;

/// Three steps on `n` values; returns the dispatches recorded.
fn three_steps(ctx: &Ctx, name: &str, k: &Kernels, n: usize, split: bool) -> u64 {
    let mut rng = rng(400 + n as u64);
    let p0 = rng.vec(n);
    let zeros = vec![0f32; n];
    let cuts = if split {
        awkward_cuts(4 * n as u64, 4)
    } else {
        Vec::new()
    };
    let (sp, sm, sv, sd) = (
        Stored::new(ctx, &p0, &cuts),
        Stored::new(ctx, &zeros, &[]),
        Stored::new(ctx, &zeros, &cuts),
        Stored::new(ctx, &zeros, &[]),
    );
    let (pp, pm, pv, pd) = (sp.parts(), sm.parts(), sv.parts(), sd.parts());
    let h = Adam {
        lr: 0.01,
        ..Adam::default()
    };
    let (b1, b2) = (f64::from(h.beta1), f64::from(h.beta2));
    let mut p: Vec<f64> = p0.iter().map(|&x| f64::from(x)).collect();
    let (mut m, mut v) = (vec![0f64; n], vec![0f64; n]);
    let before = k.counters().dispatches;
    for step in 1..=3u32 {
        let g = rng.vec(n);
        let sg = Stored::new(ctx, &g, &[]);
        let pg = sg.parts();
        let t = AdamTensors {
            param: matrix(&pp, n as u64, 1),
            grad: matrix(&pg, n as u64, 1),
            m: matrix(&pm, n as u64, 1),
            v: matrix(&pv, n as u64, 1),
            denom: matrix(&pd, n as u64, 1),
        };
        let bc2 = 1.0 - b2.powi(step as i32);
        let scale = 1.0 / bc2.sqrt();
        ctx.run(|e| {
            k.adam_with_denom(e, &t, &Adam { step, ..h }, scale, EPS_DENOM)
                .expect("adam_with_denom")
        });
        let bc1 = 1.0 - b1.powi(step as i32);
        for j in 0..n {
            let gj = f64::from(g[j]);
            m[j] = b1 * m[j] + (1.0 - b1) * gj;
            v[j] = b2 * v[j] + (1.0 - b2) * gj * gj;
            p[j] -= 0.01 / bc1 * m[j] / (v[j].sqrt() / bc2.sqrt() + f64::from(h.eps));
        }
        let denom: Vec<f64> = v.iter().map(|v| v.sqrt() * scale + EPS_DENOM).collect();
        let what = format!("{name} adam_with_denom {n} split={split} step {step}");
        assert_close(&format!("{what}: denom"), &sd.read::<f32>(ctx), &denom);
    }
    let what = format!("{name} adam_with_denom {n} split={split}");
    assert_close(&format!("{what}: param"), &sp.read::<f32>(ctx), &p);
    assert_close(&format!("{what}: m"), &sm.read::<f32>(ctx), &m);
    assert_close(&format!("{what}: v"), &sv.read::<f32>(ctx), &v);
    k.counters().dispatches - before
}

#[test]
fn adam_with_denom_matches_pytorchs_arithmetic() {
    let Some(ctx) = ctx() else { return };
    for (name, k) in ctx.all() {
        for (n, split) in [(2, false), (17, false), (1000, false), (33, true)] {
            three_steps(ctx, name, k, n, split);
        }
    }
}

/// Kernels of their own: the shared ones' counters see the other tests' dispatches.
#[test]
fn one_dispatch_a_step_where_the_tensors_allow() {
    let Some(ctx) = ctx() else { return };
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    assert_eq!(three_steps(ctx, "own", &own, 4000, false), 3);
    assert!(three_steps(ctx, "own", &own, 33, true) >= 6);
    let Some(down) = downlevel_ctx() else { return };
    let own = Kernels::new(&down.gpu.device).expect("kernels");
    assert!(three_steps(down, "downlevel", &own, 17, false) >= 6);
}
