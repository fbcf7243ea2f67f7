use crate::common::*;

fn stored_pair(
    ctx: &Ctx,
    n: usize,
    seed: u64,
    split: bool,
) -> (Vec<f32>, Vec<f32>, Stored, Stored) {
    let mut rng = rng(seed);
    let x = rng.vec(n);
    let y = rng.vec(n);
    let cuts = if split {
        awkward_cuts(4 * n as u64, 4)
    } else {
        Vec::new()
    };
    let sx = Stored::new(ctx, &x, &cuts);
    let sy = Stored::new(ctx, &y, &[4 * (n as u64 / 7)]);
    (x, y, sx, sy)
}

const SIZES: [(u64, u64); 5] = [(1, 1), (3, 1), (17, 33), (33, 40), (100, 61)];

#[test]
fn relu_forward_and_backward() {
    if let Some(ctx) = ctx() {
        relu_forward_and_backward_on(ctx);
    }
}

pub fn relu_forward_and_backward_on(ctx: &Ctx) {
    for (name, k) in ctx.all() {
        for (i, (r, c)) in SIZES.into_iter().enumerate() {
            let n = (r * c) as usize;
            let (x, y, sx, sy) = stored_pair(ctx, n, i as u64, i % 2 == 0);
            let (px, py) = (sx.parts(), sy.parts());
            let (mx, my) = (matrix(&px, r, c), matrix(&py, r, c));
            ctx.run(|e| k.relu(e, &mx, &my).expect("relu"));
            let want: Vec<f64> = x.iter().map(|&v| f64::from(v.max(0.0))).collect();
            assert_close(&format!("{name} relu {r}x{c}"), &sy.read::<f32>(ctx), &want);

            // grad = x, activation = relu(x) just computed in y.
            ctx.run(|e| k.relu_backward(e, &mx, &my).expect("relu_backward"));
            let want: Vec<f64> = x
                .iter()
                .map(|&v| if v > 0.0 { f64::from(v) } else { 0.0 })
                .collect();
            assert_close(
                &format!("{name} relu_backward {r}x{c}"),
                &sx.read::<f32>(ctx),
                &want,
            );
            let _ = y;
        }
    }
}

#[test]
fn scale_and_add() {
    if let Some(ctx) = ctx() {
        scale_and_add_on(ctx);
    }
}

pub fn scale_and_add_on(ctx: &Ctx) {
    for (name, k) in ctx.all() {
        for (i, (r, c)) in SIZES.into_iter().enumerate() {
            let n = (r * c) as usize;
            let (x, y, sx, sy) = stored_pair(ctx, n, 50 + i as u64, i % 2 == 1);
            let (px, py) = (sx.parts(), sy.parts());
            let (mx, my) = (matrix(&px, r, c), matrix(&py, r, c));
            ctx.run(|e| {
                k.scale(e, &mx, -2.5).expect("scale");
                k.add(e, &mx, &my).expect("add");
            });
            let want: Vec<f64> = x
                .iter()
                .zip(&y)
                .map(|(&a, &b)| -2.5 * f64::from(a) + f64::from(b))
                .collect();
            assert_close(
                &format!("{name} scale+add {r}x{c}"),
                &sx.read::<f32>(ctx),
                &want,
            );
        }
    }
}
