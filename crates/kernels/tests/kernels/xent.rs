//! The cross-entropy ops (`log_softmax`, `nll_loss` and their backwards) against f64
//! references: every float type, float16 native and packed (packed B×C outputs with an even
//! C, refused with an odd one), int64 labels cut mid-label over buffers (and u32 ones),
//! out-of-range labels, and a batch of two million rows in pieces.

use gpumem_kernels::{DType, KernelError, KernelLimits, Matrix, Part};

use crate::common::*;

const F16: DType = DType::F16;
const F32: DType = DType::F32;
const F64: DType = DType::F64;

/// Batch × classes: one row, odd and even widths (packed float16 outputs need even ones), a
/// wide row, and (under tiny limits) batches cut into many pieces, one with the lesson's
/// two classes.
const SHAPES: [(usize, usize); 8] = [
    (1, 1),
    (1, 2),
    (3, 2),
    (17, 10),
    (300, 3),
    (40, 150),
    (3001, 3),
    (3001, 2),
];

fn mat<'a>(parts: &'a [Part<'a>], rows: usize, cols: usize, d: DType) -> Matrix<'a> {
    Matrix::with_dtype(parts, rows as u64, cols as u64, d)
}

/// Cuts through rows of `row` elements in awkward places.
fn cuts(h: &Host, row: usize) -> Vec<u64> {
    let size = h.dtype.size();
    awkward_cuts(size * h.values.len() as u64, size * row as u64)
}

/// `labels` as int64 bytes, cut mid-label.
fn stored_labels(ctx: &Ctx, labels: &[i64]) -> Stored {
    Stored::new(ctx, labels, &awkward_cuts(8 * labels.len() as u64, 4))
}

fn log_softmax_ref(x: &[f64], c: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(c) {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let ls = row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        out.extend(row.iter().map(|v| v - m - ls));
    }
    out
}

/// Asserts that `r` is the refusal of a float16 operand that would be packed and written,
/// for the reason `why` names (`"odd number of classes"`, `"scalar"`).
#[track_caller]
fn assert_refused(what: &str, why: &str, r: Result<(), KernelError>) {
    assert!(
        matches!(r, Err(KernelError::Unsupported(ref m)) if m.contains("packed") && m.contains(why)),
        "{what}: {r:?}"
    );
}

/// Whether `k` refuses a B×`c` output of `dtype`: packed float16 with an odd `c`.
fn refuses_rows(k: &gpumem_kernels::Kernels, dtype: DType, c: usize) -> bool {
    packed_f16(k, dtype) && c % 2 == 1
}

const ODD: &str = "odd number of classes";

/// Dtypes of (x, out) of log_softmax, and of the backward's grad, logp (that out) and out:
/// float32, autocast's float16 input with float32 results, float64, mixed, float16 (the
/// engine's mixed step).
const LOG_SOFTMAX_TYPES: [[DType; 3]; 5] = [
    [F32, F32, F32],
    [F16, F32, F32],
    [F64, F64, F64],
    [F32, F64, F32],
    [F16, F16, F16],
];

#[test]
fn log_softmax_and_backward_match_reference() {
    if let Some(ctx) = ctx() {
        log_softmax_and_backward_match_reference_on(ctx);
    }
}

pub fn log_softmax_and_backward_match_reference_on(ctx: &Ctx) {
    for (name, k) in ctx.dtype_configs() {
        for (t, &[xt, lt, ot]) in LOG_SOFTMAX_TYPES.iter().enumerate() {
            if !has_dtypes(k, &[xt, lt, ot]) {
                eprintln!("{name}: no SHADER_F64, log_softmax {xt:?}/{lt:?}/{ot:?} skipped");
                continue;
            }
            for (s, &(b, c)) in SHAPES.iter().enumerate() {
                let what = format!("{name} {b}x{c} {xt:?}->{lt:?}->{ot:?}");
                let mut rng = rng(7000 + 10 * t as u64 + s as u64);
                // Large logits where the type holds them: only a stable softmax survives.
                let spread = if xt == F16 { 8.0 } else { 60.0 };
                let x = Host::from_f64(
                    xt,
                    rng.vec(b * c)
                        .iter()
                        .map(|&v| spread * f64::from(v))
                        .collect(),
                );
                let sx = Stored::of(ctx, &x, &cuts(&x, c));
                let garbage = Host::random(&mut rng, b * c, lt);
                let sl = Stored::of(ctx, &garbage, &cuts(&garbage, c)[1..]);
                let (px, pl) = (sx.parts(), sl.parts());
                let (mx, ml) = (mat(&px, b, c, xt), mat(&pl, b, c, lt));
                if refuses_rows(k, lt, c) {
                    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
                    assert_refused(&what, ODD, k.log_softmax(&mut e, &mx, &ml));
                    continue;
                }
                ctx.run(|e| k.log_softmax(e, &mx, &ml).expect("log_softmax"));
                let logp = sl.values(ctx, lt);
                assert_close_as(
                    &format!("{what} log_softmax"),
                    lt,
                    &logp,
                    &log_softmax_ref(&x.values, c),
                );

                // The backward, with the log-probabilities just computed.
                let g = Host::random(&mut rng, b * c, xt);
                let sg = Stored::of(ctx, &g, &cuts(&g, c)[..2]);
                let o = Host::random(&mut rng, b * c, ot);
                let so = Stored::of(ctx, &o, &cuts(&o, c)[2..]);
                let (pg, po) = (sg.parts(), so.parts());
                let (mg, mo) = (mat(&pg, b, c, xt), mat(&po, b, c, ot));
                if refuses_rows(k, ot, c) {
                    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
                    assert_refused(&what, ODD, k.log_softmax_backward(&mut e, &mg, &ml, &mo));
                    continue;
                }
                ctx.run(|e| {
                    k.log_softmax_backward(e, &mg, &ml, &mo)
                        .expect("log_softmax_backward")
                });
                let mut want = Vec::with_capacity(b * c);
                for (gr, lr) in g.values.chunks(c).zip(logp.chunks(c)) {
                    let sum: f64 = gr.iter().sum();
                    want.extend(gr.iter().zip(lr).map(|(g, l)| g - l.exp() * sum));
                }
                assert_close_as(
                    &format!("{what} log_softmax_backward"),
                    ot,
                    &so.values(ctx, ot),
                    &want,
                );
            }
        }
    }
}

/// Dtypes of logp, of loss and total_weight (and the backward's grad_loss), and of the
/// backward's out: float32, float16 log-probabilities, float64, mixed, float16 (scalars
/// too: refused where packed), a float16 out with float32 scalars.
const NLL_TYPES: [[DType; 3]; 6] = [
    [F32, F32, F32],
    [F16, F32, F32],
    [F64, F64, F64],
    [F32, F64, F32],
    [F16, F16, F16],
    [F32, F32, F16],
];

#[test]
fn nll_loss_and_backward_match_reference() {
    if let Some(ctx) = ctx() {
        nll_loss_and_backward_match_reference_on(ctx);
    }
}

pub fn nll_loss_and_backward_match_reference_on(ctx: &Ctx) {
    for (name, k) in ctx.dtype_configs() {
        for (t, &[lt, st, ot]) in NLL_TYPES.iter().enumerate() {
            if !has_dtypes(k, &[lt, st, ot]) {
                eprintln!("{name}: no SHADER_F64, nll_loss {lt:?}/{st:?}/{ot:?} skipped");
                continue;
            }
            for (s, &(b, c)) in SHAPES.iter().enumerate() {
                let what = format!("{name} {b}x{c} {lt:?}/{st:?}/{ot:?}");
                let mut rng = rng(8000 + 10 * t as u64 + s as u64);
                let logp = Host::from_f64(
                    lt,
                    rng.vec(b * c)
                        .iter()
                        .map(|&v| 3.0 * f64::from(v) - 3.0)
                        .collect(),
                );
                let y: Vec<i64> = (0..b)
                    .map(|_| i64::from(rng.next_u32() % c as u32))
                    .collect();
                let y32: Vec<u32> = y.iter().map(|&v| v as u32).collect();
                let sp = Stored::of(ctx, &logp, &cuts(&logp, c));
                // Int64 labels cut mid-label; u32 labels for one shape.
                let u32_labels = s == 3;
                let sy = if u32_labels {
                    Stored::new(ctx, &y32, &[4])
                } else {
                    stored_labels(ctx, &y)
                };
                let nan = Host::from_f64(st, vec![f64::NAN]);
                let (sloss, stw) = (Stored::of(ctx, &nan, &[]), Stored::of(ctx, &nan, &[]));
                let (pp, py, ploss, ptw) = (sp.parts(), sy.parts(), sloss.parts(), stw.parts());
                let my = if u32_labels {
                    Matrix::labels(&py, b as u64)
                } else {
                    Matrix::labels_i64(&py, b as u64)
                };
                let (mp, mloss, mtw) = (
                    mat(&pp, b, c, lt),
                    mat(&ploss, 1, 1, st),
                    mat(&ptw, 1, 1, st),
                );
                if packed_f16(k, st) {
                    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
                    assert_refused(&what, "scalar", k.nll_loss(&mut e, &mp, &my, &mloss, &mtw));
                    continue;
                }
                ctx.run(|e| k.nll_loss(e, &mp, &my, &mloss, &mtw).expect("nll_loss"));
                let picked: f64 = y
                    .iter()
                    .enumerate()
                    .map(|(r, &l)| logp.values[r * c + l as usize])
                    .sum();
                assert_close_as(
                    &format!("{what} loss"),
                    st,
                    &sloss.values(ctx, st),
                    &[-picked / b as f64],
                );
                let tw = stw.values(ctx, st);
                assert_close_as(&format!("{what} total_weight"), st, &tw, &[b as f64]);

                // The backward of a grad_loss of 0.75, with that total_weight.
                let sgl = Stored::of(ctx, &Host::from_f64(st, vec![0.75]), &[]);
                let so = Stored::of(
                    ctx,
                    &Host::random(&mut rng, b * c, ot),
                    &cuts(&logp, c)[1..],
                );
                let (pgl, po) = (sgl.parts(), so.parts());
                let (mgl, mo) = (mat(&pgl, 1, 1, st), mat(&po, b, c, ot));
                if refuses_rows(k, ot, c) {
                    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
                    assert_refused(
                        &what,
                        ODD,
                        k.nll_loss_backward(&mut e, &mgl, &my, &mtw, &mo),
                    );
                    continue;
                }
                ctx.run(|e| {
                    k.nll_loss_backward(e, &mgl, &my, &mtw, &mo)
                        .expect("nll_loss_backward")
                });
                let mut want = vec![0.0; b * c];
                for (r, &l) in y.iter().enumerate() {
                    want[r * c + l as usize] = -0.75 / tw[0];
                }
                assert_close_as(
                    &format!("{what} nll_loss_backward"),
                    ot,
                    &so.values(ctx, ot),
                    &want,
                );
            }
        }
    }
}

#[test]
fn out_of_range_labels_give_nan_and_zero_rows() {
    let Some(ctx) = ctx() else { return };
    let (b, c) = (9usize, 4usize);
    // A label equal to C, a negative one (-100, PyTorch's ignore_index, which the mean
    // reduction here does not ignore), and 2^32: its low word alone would be class 0.
    for (name, k) in [("full", &ctx.full), ("tiny", &ctx.tiny)] {
        for bad in [c as i64, -100, 1 << 32] {
            let mut rng = rng(8500);
            let logp = Host::random(&mut rng, b * c, F32);
            let mut y: Vec<i64> = (0..b)
                .map(|_| i64::from(rng.next_u32() % c as u32))
                .collect();
            y[5] = bad;
            let sp = Stored::of(ctx, &logp, &cuts(&logp, c));
            let sy = stored_labels(ctx, &y);
            let (sloss, stw) = (
                Stored::new(ctx, &[0f32], &[]),
                Stored::new(ctx, &[0f32], &[]),
            );
            let sgl = Stored::new(ctx, &[2f32], &[]);
            let so = Stored::new(ctx, &vec![7f32; b * c], &[]);
            let (pp, py, ploss, ptw, pgl, po) = (
                sp.parts(),
                sy.parts(),
                sloss.parts(),
                stw.parts(),
                sgl.parts(),
                so.parts(),
            );
            let my = Matrix::labels_i64(&py, b as u64);
            let (mtw, mo) = (matrix(&ptw, 1, 1), matrix(&po, b as u64, c as u64));
            ctx.run(|e| {
                k.nll_loss(e, &mat(&pp, b, c, F32), &my, &matrix(&ploss, 1, 1), &mtw)
                    .expect("nll_loss");
                k.nll_loss_backward(e, &matrix(&pgl, 1, 1), &my, &mtw, &mo)
                    .expect("nll_loss_backward");
            });
            let loss = sloss.read::<f32>(ctx)[0];
            assert!(loss.is_nan(), "{name} label {bad}: loss {loss}");
            assert_eq!(stw.read::<f32>(ctx), [b as f32]);
            let mut want = vec![0.0; b * c];
            for (r, &l) in y.iter().enumerate() {
                if r != 5 {
                    want[r * c + l as usize] = -2.0 / b as f64;
                }
            }
            assert_close(
                &format!("{name} label {bad}: backward"),
                &so.read::<f32>(ctx),
                &want,
            );
        }
    }
}

#[test]
fn nll_loss_of_two_million_rows_in_pieces_is_deterministic() {
    let Some(ctx) = ctx() else { return };
    let (b, c) = (1usize << 21, 2usize);
    let mut rng = rng(8700);
    let logp: Vec<f32> = (0..b * c).map(|_| -1.5 * (rng.uniform() + 1.0)).collect();
    let y: Vec<i64> = (0..b).map(|_| i64::from(rng.next_u32() % 2)).collect();
    let want = -y
        .iter()
        .enumerate()
        .map(|(r, &l)| f64::from(logp[r * c + l as usize]))
        .sum::<f64>()
        / b as f64;
    let sp = Stored::new(ctx, &logp, &awkward_cuts(4 * (b * c) as u64, 4 * c as u64));
    let sy = stored_labels(ctx, &y);
    let (pp, py) = (sp.parts(), sy.parts());
    let (mp, my) = (
        matrix(&pp, b as u64, c as u64),
        Matrix::labels_i64(&py, b as u64),
    );
    // 1 MiB bindings: the 16 MiB of log-probabilities and of labels in over 16 pieces each.
    let mib = ctx
        .full
        .reuse_with_limits(KernelLimits {
            max_binding: 1 << 20,
            ..*ctx.full.limits()
        })
        .expect("kernels");
    for (name, k) in [("full", &ctx.full), ("1 MiB bindings", &mib)] {
        let mut bits = Vec::new();
        for _ in 0..2 {
            let (sloss, stw) = (
                Stored::new(ctx, &[0f32], &[]),
                Stored::new(ctx, &[0f32], &[]),
            );
            let (ploss, ptw) = (sloss.parts(), stw.parts());
            ctx.run(|e| {
                k.nll_loss(e, &mp, &my, &matrix(&ploss, 1, 1), &matrix(&ptw, 1, 1))
                    .expect("nll_loss")
            });
            let loss = sloss.read::<f32>(ctx)[0];
            assert_close(&format!("{name} loss of {b} rows"), &[loss], &[want]);
            assert_eq!(stw.read::<f32>(ctx), [b as f32]);
            bits.push(loss.to_bits());
        }
        assert_eq!(bits[0], bits[1], "{name}: two runs differ");
    }
}

#[test]
fn bad_calls_are_errors() {
    let Some(ctx) = ctx() else { return };
    let (s, s1, sy) = (
        Stored::new(ctx, &[0f32; 64], &[]),
        Stored::new(ctx, &[0f32], &[]),
        Stored::new(ctx, &[0i64; 8], &[]),
    );
    let (parts, p1, py) = (s.parts(), s1.parts(), sy.parts());
    let k = &ctx.full;
    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
    let (m8x8, m4x16, one) = (
        matrix(&parts, 8, 8),
        matrix(&parts, 4, 16),
        matrix(&p1, 1, 1),
    );
    let y = Matrix::labels_i64(&py, 8);
    let shape =
        |r: Result<(), KernelError>| assert!(matches!(r, Err(KernelError::Shape(_))), "{r:?}");
    let dtype =
        |r: Result<(), KernelError>| assert!(matches!(r, Err(KernelError::DType { .. })), "{r:?}");
    shape(k.log_softmax(&mut e, &m8x8, &m4x16));
    shape(k.log_softmax_backward(&mut e, &m8x8, &m8x8, &m4x16));
    shape(k.nll_loss(&mut e, &m8x8, &Matrix::labels_i64(&parts, 7), &one, &one));
    shape(k.nll_loss(&mut e, &m8x8, &y, &matrix(&parts, 1, 2), &one));
    shape(k.nll_loss(&mut e, &matrix(&[], 8, 0), &y, &one, &one));
    shape(k.nll_loss_backward(&mut e, &one, &y, &one, &m4x16));
    // Labels must be int64 or u32; float operands must be floats.
    dtype(k.nll_loss(&mut e, &m8x8, &matrix(&parts, 8, 1), &one, &one));
    dtype(k.nll_loss_backward(&mut e, &one, &y, &one, &Matrix::labels_i64(&py, 8)));
    dtype(k.log_softmax(&mut e, &m8x8, &Matrix::with_dtype(&parts, 8, 8, DType::U32)));
    // A batch with no classes has nothing to write.
    let empty = matrix(&[], 8, 0);
    k.log_softmax(&mut e, &empty, &empty).expect("no classes");
    k.nll_loss_backward(&mut e, &one, &y, &one, &empty)
        .expect("no classes");
    drop(e);
    assert!(ctx.gpu.take_errors().is_empty());
}
