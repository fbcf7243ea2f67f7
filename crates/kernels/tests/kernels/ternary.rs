//! `threshold_backward` against a plain reference: every float type in every operand,
//! parts cut across buffers under tiny limits, and the calls it refuses.

use gpumem_kernels::{DType, KernelError, Matrix, Part};

use crate::common::*;

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::F64];

/// Lengths: one element, an odd float16 tail, several quads with a partial one.
const LENGTHS: [usize; 3] = [1, 7, 301];

fn flat<'a>(parts: &'a [Part<'a>], n: usize, d: DType) -> Matrix<'a> {
    Matrix::with_dtype(parts, 1, n as u64, d)
}

/// Cut points through `h`'s bytes, at most `k` of them.
fn cuts(h: &Host, k: usize) -> Vec<u64> {
    let bytes = h.dtype.size() * h.values.len() as u64;
    awkward_cuts(bytes, 4).into_iter().take(k).collect()
}

#[test]
fn threshold_backward_matches_reference() {
    if let Some(ctx) = ctx() {
        threshold_backward_matches_reference_on(ctx);
    }
}

/// Every (grad, output, dst) float type; outputs with zeros (`> 0` is strict) and
/// negatives; the operands cut differently, so pieces end at different places in each.
pub fn threshold_backward_matches_reference_on(ctx: &Ctx) {
    let triples = FLOATS
        .iter()
        .flat_map(|&g| FLOATS.iter().flat_map(move |&o| FLOATS.map(|d| (g, o, d))));
    for (name, k) in ctx.dtype_configs() {
        for (i, (gt, ot, dt)) in triples.clone().enumerate() {
            if !has_dtypes(k, &[gt, ot, dt]) {
                continue;
            }
            for (j, n) in LENGTHS.into_iter().enumerate() {
                let mut rng = rng(12_000 + 10 * i as u64 + j as u64);
                let grad = Host::random(&mut rng, n, gt);
                // A third of the outputs exactly zero.
                let out: Vec<f64> = (0..n)
                    .zip(rng.vec(n))
                    .map(|(e, v)| if e % 3 == 1 { 0.0 } else { f64::from(v) })
                    .collect();
                let output = Host::from_f64(ot, out);
                let dst0 = Host::random(&mut rng, n, dt);
                let sg = Stored::of(ctx, &grad, &cuts(&grad, j + 1));
                let so = Stored::of(ctx, &output, &cuts(&output, 3 - j));
                let sd = Stored::of(ctx, &dst0, &cuts(&dst0, j));
                let (pg, po, pd) = (sg.parts(), so.parts(), sd.parts());
                ctx.run(|e| {
                    let (g, o, d) = (flat(&pg, n, gt), flat(&po, n, ot), flat(&pd, n, dt));
                    k.threshold_backward(e, &g, &o, &d)
                        .expect("threshold_backward")
                });
                let want: Vec<f64> = grad
                    .values
                    .iter()
                    .zip(&output.values)
                    .map(|(&g, &o)| if o > 0.0 { g } else { 0.0 })
                    .collect();
                let want = Host::from_f64(dt, want).values;
                let what = format!("{name} threshold_backward {gt:?},{ot:?}->{dt:?} of {n}");
                assert_close_as(&what, dt, &sd.values(ctx, dt), &want);
                // The inputs are left alone.
                assert_eq!(sg.values(ctx, gt), grad.values, "{what}: grad");
                assert_eq!(so.values(ctx, ot), output.values, "{what}: output");
            }
        }
    }
}

#[test]
fn threshold_backward_refuses_bad_operands() {
    let Some(ctx) = ctx() else { return };
    let k = &ctx.full;
    let s = Stored::new(ctx, &[0f32; 16], &[]);
    let t = Stored::new(ctx, &[0f32; 8], &[]);
    let (ps, pt) = (s.parts(), t.parts());
    // Two views of one buffer, 4 elements apart: they overlap by 4.
    let shifted = [Part {
        offset: ps[0].offset + 16,
        len: 32,
        ..ps[0]
    }];
    let first = [Part { len: 32, ..ps[0] }];
    let (a, b, c) = (
        flat(&first, 8, DType::F32),
        flat(&shifted, 8, DType::F32),
        flat(&pt, 8, DType::F32),
    );
    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
    for r in [
        k.threshold_backward(&mut e, &a, &c, &b),
        k.threshold_backward(&mut e, &c, &b, &a),
        k.threshold_backward(&mut e, &a, &c, &a),
    ] {
        assert!(
            matches!(r, Err(KernelError::Parts { ref name, .. }) if name == "dst"),
            "{r:?}"
        );
    }
    // Labels are not floats; lengths must agree.
    let labels = Matrix::labels(&pt, 8);
    let r = k.threshold_backward(&mut e, &labels, &c, &a);
    assert!(matches!(r, Err(KernelError::DType { .. })), "{r:?}");
    let short = flat(&first, 4, DType::F32);
    let r = k.threshold_backward(&mut e, &a, &short, &c);
    assert!(matches!(r, Err(KernelError::Shape(_))), "{r:?}");
    drop(e);
    assert!(ctx.gpu.take_errors().is_empty());
}

/// Adjacent tensors in one buffer (as the allocator places them) are not an overlap.
#[test]
fn threshold_backward_beside_its_operands_in_one_buffer() {
    let Some(ctx) = ctx() else { return };
    let values: Vec<f32> = (0..24).map(|i| i as f32 - 12.0).collect();
    let s = Stored::new(ctx, &values, &[]);
    let p = s.parts()[0];
    let third = |i: u64| {
        [Part {
            offset: p.offset + 32 * i,
            len: 32,
            ..p
        }]
    };
    let (pg, po, pd) = (third(0), third(1), third(2));
    ctx.run(|e| {
        let (g, o, d) = (
            flat(&pg, 8, DType::F32),
            flat(&po, 8, DType::F32),
            flat(&pd, 8, DType::F32),
        );
        ctx.full
            .threshold_backward(e, &g, &o, &d)
            .expect("threshold_backward")
    });
    let got: Vec<f32> = s.read(ctx);
    let want: Vec<f32> = (0..8)
        .map(|i| if values[8 + i] > 0.0 { values[i] } else { 0.0 })
        .collect();
    assert_eq!(got[..16], values[..16]);
    assert_eq!(got[16..], want[..]);
}
