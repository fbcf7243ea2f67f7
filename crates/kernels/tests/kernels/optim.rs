use gpumem_kernels::Adam;

use crate::common::*;

#[test]
fn sgd_step() {
    if let Some(ctx) = ctx() {
        sgd_step_on(ctx);
    }
}

pub fn sgd_step_on(ctx: &Ctx) {
    for (name, k) in ctx.all() {
        for (i, n) in [1usize, 7, 33, 2000].into_iter().enumerate() {
            let mut rng = rng(200 + i as u64);
            let (p, g) = (rng.vec(n), rng.vec(n));
            let sp = Stored::new(ctx, &p, &awkward_cuts(4 * n as u64, 4));
            let sg = Stored::new(ctx, &g, &[]);
            let (pp, pg) = (sp.parts(), sg.parts());
            let (mp, mg) = (matrix(&pp, n as u64, 1), matrix(&pg, 1, n as u64));
            ctx.run(|e| k.sgd(e, &mp, &mg, 0.1).expect("sgd"));
            let want: Vec<f64> = p
                .iter()
                .zip(&g)
                .map(|(&p, &g)| f64::from(p) - 0.1 * f64::from(g))
                .collect();
            assert_close(&format!("{name} sgd {n}"), &sp.read::<f32>(ctx), &want);
        }
    }
}

#[test]
fn adam_three_steps_like_pytorch() {
    if let Some(ctx) = ctx() {
        adam_three_steps_like_pytorch_on(ctx);
    }
}

pub fn adam_three_steps_like_pytorch_on(ctx: &Ctx) {
    for (name, k) in ctx.all() {
        for (i, n) in [1usize, 17, 1500].into_iter().enumerate() {
            let mut rng = rng(300 + i as u64);
            let p0 = rng.vec(n);
            let zeros = vec![0f32; n];
            let cuts = awkward_cuts(4 * n as u64, 4);
            let (sp, sm, sv) = (
                Stored::new(ctx, &p0, &cuts),
                Stored::new(ctx, &zeros, &[]),
                Stored::new(ctx, &zeros, &cuts[1..]),
            );
            let (pp, pm, pv) = (sp.parts(), sm.parts(), sv.parts());
            let (mp, mm, mv) = (
                matrix(&pp, n as u64, 1),
                matrix(&pm, n as u64, 1),
                matrix(&pv, n as u64, 1),
            );
            let h = Adam {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                step: 1,
            };
            let (mut p, mut m, mut v) = (
                p0.iter().map(|&x| f64::from(x)).collect::<Vec<_>>(),
                vec![0f64; n],
                vec![0f64; n],
            );
            for step in 1..=3u32 {
                let g = rng.vec(n);
                let sg = Stored::new(ctx, &g, &[]);
                let pg = sg.parts();
                let mg = matrix(&pg, n as u64, 1);
                ctx.run(|e| {
                    k.adam(e, &mp, &mg, &mm, &mv, &Adam { step, ..h })
                        .expect("adam")
                });
                let (b1, b2) = (0.9f64, 0.999f64);
                for j in 0..n {
                    let gj = f64::from(g[j]);
                    m[j] = b1 * m[j] + (1.0 - b1) * gj;
                    v[j] = b2 * v[j] + (1.0 - b2) * gj * gj;
                    let bc1 = 1.0 - b1.powi(step as i32);
                    let bc2 = 1.0 - b2.powi(step as i32);
                    p[j] -= 0.01 / bc1 * m[j] / (v[j].sqrt() / bc2.sqrt() + 1e-8);
                }
            }
            assert_close(&format!("{name} adam param {n}"), &sp.read::<f32>(ctx), &p);
            assert_close(&format!("{name} adam m {n}"), &sm.read::<f32>(ctx), &m);
            assert_close(&format!("{name} adam v {n}"), &sv.read::<f32>(ctx), &v);
        }
    }
}
