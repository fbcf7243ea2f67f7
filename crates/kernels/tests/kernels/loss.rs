use crate::common::*;

fn reference(z: &[f32], labels: &[u32], c: usize, scale: f64) -> (Vec<f64>, Vec<f64>) {
    let mut stats = Vec::new();
    let mut d = Vec::new();
    for (r, &label) in labels.iter().enumerate() {
        let row: Vec<f64> = z[r * c..(r + 1) * c]
            .iter()
            .map(|&x| f64::from(x))
            .collect();
        let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let arg = row.iter().position(|&x| x == max).unwrap_or(0);
        let sum: f64 = row.iter().map(|x| (x - max).exp()).sum();
        stats.push(sum.ln() + max - row[label as usize]);
        stats.push(if arg == label as usize { 1.0 } else { 0.0 });
        for (j, x) in row.iter().enumerate() {
            let onehot = if j == label as usize { 1.0 } else { 0.0 };
            d.push(((x - max).exp() / sum - onehot) * scale);
        }
    }
    (stats, d)
}

#[test]
fn softmax_xent_matches_reference() {
    if let Some(ctx) = ctx() {
        softmax_xent_matches_reference_on(ctx);
    }
}

pub fn softmax_xent_matches_reference_on(ctx: &Ctx) {
    for (name, k) in ctx.all() {
        for (i, (b, c)) in [
            (1usize, 1usize),
            (3, 2),
            (17, 2),
            (33, 10),
            (300, 3),
            (40, 150),
        ]
        .into_iter()
        .enumerate()
        {
            let mut rng = rng(400 + i as u64);
            // Large logits: only a stable softmax survives them.
            let z: Vec<f32> = rng.vec(b * c).into_iter().map(|x| x * 60.0).collect();
            let labels: Vec<u32> = (0..b).map(|_| rng.next_u32() % c as u32).collect();
            let scale = 1.0 / b as f32;
            let split = i % 2 == 1;
            let cuts = |len: usize, row: usize| {
                if split {
                    awkward_cuts(4 * len as u64, 4 * row as u64)
                } else {
                    Vec::new()
                }
            };
            let sz = Stored::new(ctx, &z, &cuts(b * c, c));
            let sl = Stored::new(ctx, &labels, &cuts(b, 1));
            let ss = Stored::new(ctx, &vec![0f32; 2 * b], &cuts(2 * b, 2));
            let sd = Stored::new(ctx, &vec![0f32; b * c], &cuts(b * c, c));
            let (pz, pl, ps, pd) = (sz.parts(), sl.parts(), ss.parts(), sd.parts());
            let (mz, ml, ms, md) = (
                matrix(&pz, b as u64, c as u64),
                labels_of(&pl, b as u64),
                matrix(&ps, b as u64, 2),
                matrix(&pd, b as u64, c as u64),
            );
            ctx.run(|e| {
                k.softmax_xent(e, &mz, &ml, &ms, &md, scale)
                    .expect("softmax_xent")
            });
            let (stats, d) = reference(&z, &labels, c, f64::from(scale));
            assert_close(
                &format!("{name} xent stats {b}x{c}"),
                &ss.read::<f32>(ctx),
                &stats,
            );
            assert_close(
                &format!("{name} xent dlogits {b}x{c}"),
                &sd.read::<f32>(ctx),
                &d,
            );
        }
    }
}

fn labels_of<'a>(parts: &'a [gpumem_kernels::Part<'a>], n: u64) -> gpumem_kernels::Matrix<'a> {
    labels(parts, n)
}
