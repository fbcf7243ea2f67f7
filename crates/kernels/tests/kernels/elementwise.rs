use gpumem_kernels::{DType, KernelError, Matrix, Part};

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

const F16: DType = DType::F16;
const F32: DType = DType::F32;
const F64: DType = DType::F64;
const FLOATS: [DType; 3] = [F32, F16, F64];

fn flat<'a>(parts: &'a [Part<'a>], n: usize, d: DType) -> Matrix<'a> {
    Matrix::with_dtype(parts, 1, n as u64, d)
}

/// Cut points through a flat tensor of `h`'s length, at most `k` of them.
fn cuts(h: &Host, k: usize) -> Vec<u64> {
    let bytes = h.dtype.size() * h.values.len() as u64;
    awkward_cuts(bytes, 4).into_iter().take(k).collect()
}

/// Lengths: one element, an odd float16 tail, several quads with a partial one.
const LENGTHS: [usize; 3] = [1, 7, 301];

#[test]
fn copy_converts_between_float_types() {
    if let Some(ctx) = ctx() {
        copy_converts_between_float_types_on(ctx);
    }
}

pub fn copy_converts_between_float_types_on(ctx: &Ctx) {
    for (name, k) in ctx.dtype_configs() {
        for (i, (src, dst)) in FLOATS
            .iter()
            .flat_map(|&s| FLOATS.map(|d| (s, d)))
            .enumerate()
        {
            if !has_dtypes(k, &[src, dst]) {
                continue;
            }
            for (j, n) in LENGTHS.into_iter().enumerate() {
                let mut rng = rng(9000 + 10 * i as u64 + j as u64);
                // Full f64 mantissas (times pi): a copy through f32 would lose them.
                let values = rng
                    .vec(n)
                    .into_iter()
                    .map(|v| 100.0 * std::f64::consts::PI * f64::from(v));
                let x = Host::from_f64(src, values.collect());
                let sx = Stored::of(ctx, &x, &cuts(&x, j));
                let y0 = Host::random(&mut rng, n, dst);
                let sy = Stored::of(ctx, &y0, &cuts(&y0, 3 - j));
                let (px, py) = (sx.parts(), sy.parts());
                ctx.run(|e| {
                    k.copy(e, &flat(&px, n, src), &flat(&py, n, dst))
                        .expect("copy")
                });
                let want = Host::from_f64(dst, x.values.clone()).values;
                assert_close_as(
                    &format!("{name} copy {src:?}->{dst:?} of {n}"),
                    dst,
                    &sy.values(ctx, dst),
                    &want,
                );
                // The source is left alone.
                assert_eq!(sx.values(ctx, src), x.values);
            }
        }
    }
}

#[test]
fn adam_denom_matches_reference() {
    if let Some(ctx) = ctx() {
        adam_denom_matches_reference_on(ctx);
    }
}

pub fn adam_denom_matches_reference_on(ctx: &Ctx) {
    // 1 / sqrt(1 - beta2^t) at t = 3, as foreach Adam divides by it.
    let scale = 1.0 / (1.0 - 0.999f64.powi(3)).sqrt();
    for (name, k) in ctx.dtype_configs() {
        for (i, (vt, dt)) in [(F32, F32), (F16, F16), (F64, F64), (F32, F64), (F16, F32)]
            .into_iter()
            .enumerate()
        {
            if !has_dtypes(k, &[vt, dt]) {
                continue;
            }
            for (j, n) in LENGTHS.into_iter().enumerate() {
                // PyTorch's eps, and one large enough that leaving it out fails.
                let eps = if (i + j) % 2 == 0 { 1e-8 } else { 0.25 };
                let mut rng = rng(9500 + 10 * i as u64 + j as u64);
                let v = Host::from_f64(
                    vt,
                    rng.vec(n)
                        .iter()
                        .map(|&x| 0.01 * f64::from(x.abs()))
                        .collect(),
                );
                let sv = Stored::of(ctx, &v, &cuts(&v, 3 - j));
                let sd = Stored::of(ctx, &Host::random(&mut rng, n, dt), &[]);
                let (pv, pd) = (sv.parts(), sd.parts());
                ctx.run(|e| {
                    k.adam_denom(e, &flat(&pv, n, vt), &flat(&pd, n, dt), scale, eps)
                        .expect("adam_denom")
                });
                let want: Vec<f64> = v.values.iter().map(|x| x.sqrt() * scale + eps).collect();
                assert_close_as(
                    &format!("{name} adam_denom {vt:?}->{dt:?} of {n}, eps {eps}"),
                    dt,
                    &sd.values(ctx, dt),
                    &want,
                );
            }
        }
    }
}

#[test]
fn fill_writes_every_element() {
    if let Some(ctx) = ctx() {
        fill_writes_every_element_on(ctx);
    }
}

/// Every float type on every device: float64 without `SHADER_F64` is copied bytes.
pub fn fill_writes_every_element_on(ctx: &Ctx) {
    for (name, k) in ctx.dtype_configs() {
        for dt in FLOATS {
            let mut values = vec![1.0, -0.1, 1_234.567_890_123_4];
            if dt == F64 {
                values.extend([1e-300, -3e300, std::f64::consts::E * 1e-20]);
            }
            for (j, n) in LENGTHS.into_iter().enumerate() {
                for &value in &values {
                    let mut rng = rng(9900 + j as u64);
                    let x = Host::random(&mut rng, n, dt);
                    let sx = Stored::of(ctx, &x, &cuts(&x, j + 1));
                    let px = sx.parts();
                    ctx.run(|e| k.fill(e, &flat(&px, n, dt), value).expect("fill"));
                    let want = Host::from_f64(dt, vec![value; n]).values;
                    let got = sx.values(ctx, dt);
                    let what = format!("{name} fill {dt:?} of {n} with {value}");
                    assert_close_as(&what, dt, &got, &want);
                    if dt == F64 {
                        // Exact: the value reaches the shader split without loss.
                        assert_eq!(got, want, "{what}");
                    }
                }
            }
        }
    }
}

/// Without `SHADER_F64` (GradScaler's float64 scale under mixed precision on GL): fill
/// writes float64 exactly, in every part (cut mid-element) and past the staged pattern's
/// length, while a kernel that computes in float64 is still refused.
#[test]
fn float64_fill_without_shader_f64() {
    let Some(ctx) = bare_ctx() else { return };
    assert!(!ctx.full.supports_f64() && !ctx.full.uses_native_f16());
    fill_writes_every_element_on(ctx);
    // 2.5 MiB, cut 4 bytes into an element: over the 1 MiB staged at once.
    let n = 5 << 16;
    let x = Host::from_f64(F64, vec![0.0; n]);
    let sx = Stored::of(ctx, &x, &[8 * 1000 + 4]);
    let px = sx.parts();
    let value = -std::f64::consts::PI * 1e-200;
    ctx.run(|e| ctx.full.fill(e, &flat(&px, n, F64), value).expect("fill"));
    assert!(sx.values(ctx, F64).iter().all(|&v| v == value));
    let y = Stored::of(ctx, &Host::from_f64(F32, vec![0.0; n]), &[]);
    let py = y.parts();
    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
    let r = ctx
        .full
        .copy(&mut e, &flat(&px, n, F64), &flat(&py, n, F32));
    assert!(
        matches!(r, Err(KernelError::Unsupported(ref m)) if m.contains("SHADER_F64")),
        "{r:?}"
    );
}

#[test]
fn labels_are_not_floats() {
    let Some(ctx) = ctx() else { return };
    let (sa, sb) = (
        Stored::new(ctx, &[0f32; 8], &[]),
        Stored::new(ctx, &[0f32; 4], &[]),
    );
    let (pa, pb) = (sa.parts(), sb.parts());
    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
    let (x, y) = (matrix(&pb, 1, 4), Matrix::labels_i64(&pa, 4));
    for r in [
        ctx.full.copy(&mut e, &y, &x),
        ctx.full.copy(&mut e, &x, &Matrix::labels(&pb, 4)),
        ctx.full.fill(&mut e, &y, 1.0),
        ctx.full.adam_denom(&mut e, &x, &y, 1.0, 0.0),
    ] {
        assert!(matches!(r, Err(KernelError::DType { .. })), "{r:?}");
    }
    let r = ctx.full.copy(&mut e, &x, &matrix(&pa, 1, 8));
    assert!(matches!(r, Err(KernelError::Shape(_))), "{r:?}");
    drop(e);
    assert!(ctx.gpu.take_errors().is_empty());
}
