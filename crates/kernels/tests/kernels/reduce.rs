use crate::common::*;

#[test]
fn colsum_matches_reference() {
    if let Some(ctx) = ctx() {
        colsum_matches_reference_on(ctx);
    }
}

pub fn colsum_matches_reference_on(ctx: &Ctx) {
    for (name, k) in ctx.all() {
        for (i, (r, c)) in [
            (1usize, 1usize),
            (3, 2),
            (17, 33),
            (1000, 2),
            (5000, 3),
            (70, 300),
        ]
        .into_iter()
        .enumerate()
        {
            let mut rng = rng(600 + i as u64);
            let src = rng.vec(r * c);
            let dst0 = rng.vec(c);
            for accumulate in [false, true] {
                let cuts = awkward_cuts(4 * (r * c) as u64, 4 * c as u64);
                let ss = Stored::new(ctx, &src, &cuts);
                let sd = Stored::new(ctx, &dst0, &awkward_cuts(4 * c as u64, 4)[..1]);
                let (ps, pd) = (ss.parts(), sd.parts());
                let (ms, md) = (matrix(&ps, r as u64, c as u64), matrix(&pd, 1, c as u64));
                ctx.run(|e| k.colsum(e, &ms, &md, accumulate).expect("colsum"));
                let want: Vec<f64> = (0..c)
                    .map(|j| {
                        let s: f64 = (0..r).map(|row| f64::from(src[row * c + j])).sum();
                        s + if accumulate { f64::from(dst0[j]) } else { 0.0 }
                    })
                    .collect();
                assert_close(
                    &format!("{name} colsum {r}x{c} acc={accumulate}"),
                    &sd.read::<f32>(ctx),
                    &want,
                );
            }
        }
    }
}

#[test]
fn colsum_is_deterministic() {
    let Some(ctx) = ctx() else { return };
    let mut rng = rng(77);
    let src = rng.vec(20000 * 3);
    let ss = Stored::new(ctx, &src, &[]);
    let ps = ss.parts();
    let ms = matrix(&ps, 20000, 3);
    let mut results = Vec::new();
    for _ in 0..3 {
        let sd = Stored::new(ctx, &[0f32; 3], &[]);
        let pd = sd.parts();
        let md = matrix(&pd, 1, 3);
        ctx.run(|e| ctx.full.colsum(e, &ms, &md, false).expect("colsum"));
        results.push(
            sd.read::<f32>(ctx)
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>(),
        );
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");
}
