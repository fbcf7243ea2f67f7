//! float16 (native and packed) and float64 operands against f64 references, on odd shapes,
//! tensors split mid-row over several buffers, and tiny limits; the tolerance rule is
//! per result dtype (`common::tolerance`). Packed float16 is checked under the device's
//! and tiny limits (`full_packed`, `packed`); the sentinels around every part catch a
//! kernel that clobbers the other half of a tensor's last word.

use gpumem_kernels::{Adam, DType, Gemm, GpuOptions, KernelError, Kernels, MatmulKernel, Matrix};

use crate::common::*;

const F16: DType = DType::F16;
const F32: DType = DType::F32;
const F64: DType = DType::F64;

fn mat<'a>(
    parts: &'a [gpumem_kernels::Part<'a>],
    rows: usize,
    cols: usize,
    d: DType,
) -> Matrix<'a> {
    Matrix::with_dtype(parts, rows as u64, cols as u64, d)
}

/// Cuts through rows (multiples of 4 bytes) when `split`.
fn cuts(split: bool, h: &Host, cols: usize) -> Vec<u64> {
    if split {
        let size = h.dtype.size();
        awkward_cuts(size * h.values.len() as u64, size * cols as u64)
    } else {
        Vec::new()
    }
}

#[derive(Clone, Copy, Debug)]
struct Mm {
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
    acc: bool,
    bias: bool,
    split: bool,
    /// Dtypes of a, b, c (the bias is float64 when any of them is, float32 otherwise).
    dt: [DType; 3],
}

fn check_mm(ctx: &Ctx, name: &str, kernels: &Kernels, kernel: MatmulKernel, case: Mm, seed: u64) {
    let Mm {
        m, k, n, ta, tb, ..
    } = case;
    let [da, db, dc] = case.dt;
    let dbias = if case.dt.contains(&F64) { F64 } else { F32 };
    let mut rng = rng(seed);
    let a = Host::random(&mut rng, m * k, da);
    let b = Host::random(&mut rng, k * n, db);
    let c0 = Host::random(&mut rng, m * n, dc);
    let bias = Host::random(&mut rng, n, dbias);
    let (a_rows, a_cols) = if ta { (k, m) } else { (m, k) };
    let (b_rows, b_cols) = if tb { (n, k) } else { (k, n) };
    let sa = Stored::of(ctx, &a, &cuts(case.split, &a, a_cols));
    let sb = Stored::of(ctx, &b, &cuts(case.split, &b, b_cols));
    let sc = Stored::of(ctx, &c0, &cuts(case.split, &c0, n));
    let sbias = Stored::of(ctx, &bias, &[]);
    let (pa, pb, pc, pbias) = (sa.parts(), sb.parts(), sc.parts(), sbias.parts());
    let g = Gemm {
        a: mat(&pa, a_rows, a_cols, da),
        trans_a: ta,
        b: mat(&pb, b_rows, b_cols, db),
        trans_b: tb,
        c: mat(&pc, m, n, dc),
        accumulate: case.acc,
        bias: case.bias.then(|| mat(&pbias, 1, n, dbias)),
    };
    ctx.run(|e| kernels.matmul_with(e, &g, kernel).expect("matmul"));
    let mut want = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f64;
            for kk in 0..k {
                let x = if ta {
                    a.values[kk * m + i]
                } else {
                    a.values[i * k + kk]
                };
                let y = if tb {
                    b.values[j * k + kk]
                } else {
                    b.values[kk * n + j]
                };
                s += x * y;
            }
            if case.bias {
                s += bias.values[j];
            }
            if case.acc {
                s += c0.values[i * n + j];
            }
            want[i * n + j] = s;
        }
    }
    assert_close_as(
        &format!("{name} {kernel:?} {case:?}"),
        dc,
        &sc.values(ctx, dc),
        &want,
    );
}

/// The mixed-precision products: z = a·W (a, z float16), the first layer z = x·W (x
/// float32), logits = a·W (a float16, logits float32), dW = aᵀ·d (a, d float16, dW
/// float32), dW_out = aᵀ·dlogits (float32 dlogits) and dA = d·Wᵀ (d, dA float16).
const MIXED: [(bool, bool, [DType; 3]); 8] = [
    (false, false, [F16, F32, F16]),
    (false, false, [F32, F32, F16]),
    (false, false, [F16, F32, F32]),
    (true, false, [F16, F16, F32]),
    (true, false, [F16, F32, F32]),
    (true, false, [F32, F16, F32]),
    (false, true, [F16, F32, F16]),
    (false, true, [F32, F32, F16]),
];

/// Shapes that reach every kernel: k ≤ 4, n ≤ 4 (with and without split-k), m ≤ 4,
/// tiled (with a k tail; `TILED`), naive, odd widths of float16 rows (rows straddling
/// words).
const SHAPES: [(usize, usize, usize); 9] = [
    (37, 2, 50),
    (9, 3, 7),
    (45, 33, 2),
    (21, 200, 2),
    (2, 150, 38),
    (3, 20, 41),
    (40, 38, 20),
    (17, 33, 9),
    (1, 1, 1),
];

/// The shape that takes the tiled kernel. Each storage combination is a tiled pipeline
/// that llvmpipe compiles for seconds, so it is checked for the engine's combinations
/// (`MIXED` 0, 3, 6) and float64 NN only: the generator's other paths are the same text.
const TILED: (usize, usize, usize) = (40, 38, 20);

#[test]
fn float16_matmul_every_kernel_and_layout() {
    if let Some(ctx) = ctx() {
        float16_matmul_every_kernel_and_layout_on(ctx);
    }
}

pub fn float16_matmul_every_kernel_and_layout_on(ctx: &Ctx) {
    let configs = [
        ("full", &ctx.full),
        ("full_packed", &ctx.full_packed),
        ("packed", &ctx.packed),
        ("tiny", &ctx.tiny),
    ];
    let mut seed = 3000;
    for (s, &(m, k, n)) in SHAPES.iter().enumerate() {
        for (f, &(ta, tb, dt)) in MIXED.iter().enumerate() {
            if (m, k, n) == TILED && ![0, 3, 6].contains(&f) {
                continue;
            }
            // Native and packed float16, each under the device's or tiny limits by turns.
            let turn = (s + f) % 2;
            for ci in [turn, 2 + turn] {
                let (name, kernels) = configs[ci];
                seed += 1;
                let case = Mm {
                    m,
                    k,
                    n,
                    ta,
                    tb,
                    acc: (s + f + ci) % 2 == 1,
                    bias: (s + f) % 3 != 1 && !ta,
                    split: ci >= 2 || (s + f) % 3 == 0,
                    dt,
                };
                check_mm(ctx, name, kernels, MatmulKernel::Auto, case, seed);
            }
        }
    }
    // Both operands transposed and the naive kernel everywhere, packed and native.
    for (name, kernels) in [("full", &ctx.full), ("packed", &ctx.packed)] {
        for (i, &(m, k, n)) in SHAPES.iter().enumerate() {
            let dt = [F16, F16, F16];
            for (ta, tb, kernel) in [
                (true, true, MatmulKernel::Auto),
                (false, false, MatmulKernel::Naive),
            ] {
                let case = Mm {
                    m,
                    k,
                    n,
                    ta,
                    tb,
                    acc: i % 2 == 0,
                    bias: i % 3 == 0,
                    split: i % 2 == 1,
                    dt,
                };
                check_mm(ctx, name, kernels, kernel, case, 3500 + i as u64);
            }
        }
    }
}

#[test]
fn float16_long_reduction_splits_k() {
    let Some(ctx) = ctx() else { return };
    // dW of the output layer and of the first layer at a batch of 3001 rows: split-k and,
    // under tiny limits, hundreds of reduction pieces.
    for (name, kernels) in [("full", &ctx.full), ("packed", &ctx.packed)] {
        for (m, n, dt) in [(12, 2, [F16, F32, F32]), (2, 10, [F32, F16, F32])] {
            let case = Mm {
                m,
                k: 3001,
                n,
                ta: true,
                tb: false,
                acc: false,
                bias: false,
                split: true,
                dt,
            };
            check_mm(
                ctx,
                name,
                kernels,
                MatmulKernel::Auto,
                case,
                3900 + m as u64,
            );
        }
    }
}

#[test]
fn float16_elementwise_and_colsum_odd_lengths() {
    if let Some(ctx) = ctx() {
        float16_elementwise_and_colsum_odd_lengths_on(ctx);
    }
}

pub fn float16_elementwise_and_colsum_odd_lengths_on(ctx: &Ctx) {
    let configs = [
        ("full", &ctx.full),
        ("full_packed", &ctx.full_packed),
        ("tiny", &ctx.tiny),
        ("packed", &ctx.packed),
    ];
    for (name, k) in configs {
        for (i, (r, c)) in [(1usize, 1usize), (1, 3), (7, 1), (17, 33), (101, 61)]
            .into_iter()
            .enumerate()
        {
            let n = r * c;
            let mut rng = rng(4000 + i as u64);
            let x = Host::random(&mut rng, n, F16);
            let y = Host::random(&mut rng, n, F16);
            let (sx, sy) = (
                Stored::of(ctx, &x, &cuts(i % 2 == 0, &x, 1)),
                Stored::of(ctx, &y, &cuts(true, &y, c)),
            );
            let (px, py) = (sx.parts(), sy.parts());
            let (mx, my) = (mat(&px, r, c, F16), mat(&py, r, c, F16));
            ctx.run(|e| k.relu(e, &mx, &my).expect("relu"));
            let relu: Vec<f64> = x.values.iter().map(|&v| v.max(0.0)).collect();
            assert_close_as(
                &format!("{name} relu {r}x{c}"),
                F16,
                &sy.values(ctx, F16),
                &relu,
            );
            // The gradient through it, in place, with the activation just written.
            let d = Host::random(&mut rng, n, F16);
            let sd = Stored::of(ctx, &d, &cuts(i % 2 == 1, &d, c));
            let pd = sd.parts();
            let md = mat(&pd, r, c, F16);
            ctx.run(|e| k.relu_backward(e, &md, &my).expect("relu_backward"));
            let want: Vec<f64> = d
                .values
                .iter()
                .zip(&relu)
                .map(|(&g, &a)| if a > 0.0 { g } else { 0.0 })
                .collect();
            assert_close_as(
                &format!("{name} relu_backward {r}x{c}"),
                F16,
                &sd.values(ctx, F16),
                &want,
            );
            ctx.run(|e| k.scale(e, &md, 0.5).expect("scale"));
            let want: Vec<f64> = want.iter().map(|v| v * 0.5).collect();
            assert_close_as(
                &format!("{name} scale {r}x{c}"),
                F16,
                &sd.values(ctx, F16),
                &want,
            );
            // Bias gradient: float16 rows summed into float32.
            let b0 = Host::random(&mut rng, c, F32);
            let sb = Stored::of(ctx, &b0, &[]);
            let pb = sb.parts();
            let mb = mat(&pb, 1, c, F32);
            ctx.run(|e| k.colsum(e, &md, &mb, true).expect("colsum"));
            let sums: Vec<f64> = (0..c)
                .map(|j| b0.values[j] + (0..r).map(|row| want[row * c + j]).sum::<f64>())
                .collect();
            assert_close_as(
                &format!("{name} colsum {r}x{c}"),
                F32,
                &sb.values(ctx, F32),
                &sums,
            );
        }
    }
}

#[test]
fn unscale_check_flags_any_overflow() {
    let Some(ctx) = ctx() else { return };
    for (name, k) in [("full", &ctx.full), ("tiny", &ctx.tiny)] {
        for (dt, bad) in [
            (F32, None),
            (F32, Some(f64::INFINITY)),
            (F32, Some(f64::NAN)),
            (F64, None),
            (F64, Some(f64::NEG_INFINITY)),
        ] {
            if dt == F64 && !k.supports_f64() {
                continue;
            }
            let n = 301;
            let mut rng = rng(4500);
            let mut x = Host::random(&mut rng, n, dt);
            if let Some(v) = bad {
                x.values[157] = v;
            }
            let sx = Stored::of(ctx, &x, &cuts(true, &x, 1));
            let sf = Stored::of(ctx, &Host::from_f64(dt, vec![0.0]), &[]);
            let (px, pf) = (sx.parts(), sf.parts());
            let (mx, mf) = (mat(&px, 7, 43, dt), mat(&pf, 1, 1, dt));
            ctx.run(|e| k.unscale_check(e, &mx, 0.25, &mf).expect("unscale_check"));
            let got = sx.values(ctx, dt);
            for (i, (&g, &v)) in got.iter().zip(&x.values).enumerate() {
                let w = v * 0.25;
                assert!(
                    g == w || (g.is_nan() && w.is_nan()),
                    "{name} {dt:?} x[{i}]: {g} vs {w}"
                );
            }
            let flag = sf.values(ctx, dt)[0];
            assert_eq!(
                flag,
                if bad.is_some() { 1.0 } else { 0.0 },
                "{name} {dt:?} {bad:?}"
            );
            // A finite tensor after a bad one leaves the flag set.
            if bad.is_some() {
                let ok = Stored::of(ctx, &Host::from_f64(dt, vec![1.0; 5]), &[]);
                let po = ok.parts();
                let mo = mat(&po, 1, 5, dt);
                ctx.run(|e| k.unscale_check(e, &mo, 2.0, &mf).expect("unscale_check"));
                assert_eq!(sf.values(ctx, dt)[0], 1.0);
                assert_eq!(ok.values(ctx, dt), vec![2.0; 5]);
            }
        }
    }
    // A packed float16 flag would be written by many invocations: refused.
    let sx = Stored::of(ctx, &Host::from_f64(F32, vec![0.0; 3]), &[]);
    let sf = Stored::of(ctx, &Host::from_f64(F16, vec![0.0]), &[]);
    let (px, pf) = (sx.parts(), sf.parts());
    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
    let r = ctx
        .packed
        .unscale_check(&mut e, &mat(&px, 1, 3, F32), 1.0, &mat(&pf, 1, 1, F16));
    assert!(matches!(r, Err(KernelError::Unsupported(_))), "{r:?}");
}

#[test]
fn float64_matmul_every_kernel() {
    if let Some(ctx) = ctx() {
        float64_matmul_every_kernel_on(ctx);
    }
}

pub fn float64_matmul_every_kernel_on(ctx: &Ctx) {
    if !ctx.full.supports_f64() {
        eprintln!("no SHADER_F64 on this adapter: float64_matmul_every_kernel skipped");
        return;
    }
    let mut seed = 5000;
    for (s, &(m, k, n)) in SHAPES.iter().enumerate() {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            if (m, k, n) == TILED && (ta || tb) {
                continue;
            }
            // Under tiny limits with parts cut through rows (float64 rows 4 bytes off
            // their alignment are gathered one by one) for a third of the shapes.
            let tiny = s % 3 == 0;
            let (name, kernels) = if tiny {
                ("tiny", &ctx.tiny)
            } else {
                ("full", &ctx.full)
            };
            seed += 1;
            let case = Mm {
                m,
                k,
                n,
                ta,
                tb,
                acc: seed % 2 == 0,
                bias: seed % 3 != 0,
                split: tiny,
                dt: [F64; 3],
            };
            check_mm(ctx, name, kernels, MatmulKernel::Auto, case, seed);
        }
    }
    // A long reduction (split-k) in f64 keeps f64's precision.
    let case = Mm {
        m: 3,
        k: 5001,
        n: 6,
        ta: true,
        tb: false,
        acc: false,
        bias: false,
        split: false,
        dt: [F64; 3],
    };
    check_mm(ctx, "full", &ctx.full, MatmulKernel::Auto, case, 5999);
}

#[test]
fn float64_step_kernels() {
    if let Some(ctx) = ctx() {
        float64_step_kernels_on(ctx);
    }
}

pub fn float64_step_kernels_on(ctx: &Ctx) {
    if !ctx.full.supports_f64() {
        eprintln!("no SHADER_F64 on this adapter: float64_step_kernels skipped");
        return;
    }
    for (name, k) in [("full", &ctx.full), ("tiny", &ctx.tiny)] {
        let (r, c) = (37usize, 5usize);
        let n = r * c;
        let mut rng = rng(6000);
        let x = Host::random(&mut rng, n, F64);
        let sx = Stored::of(ctx, &x, &cuts(true, &x, c));
        let sy = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; n]), &[]);
        let (px, py) = (sx.parts(), sy.parts());
        let (mx, my) = (mat(&px, r, c, F64), mat(&py, r, c, F64));
        ctx.run(|e| {
            k.relu(e, &mx, &my).expect("relu");
            k.add(e, &my, &mx).expect("add");
            k.scale(e, &my, 1.5).expect("scale");
        });
        let want: Vec<f64> = x.values.iter().map(|&v| (v.max(0.0) + v) * 1.5).collect();
        assert_close_as(
            &format!("{name} f64 relu/add/scale"),
            F64,
            &sy.values(ctx, F64),
            &want,
        );

        // Softmax cross-entropy with exp and log written out in f64.
        let logits = Host::from_f64(F64, x.values.iter().map(|v| v * 7.0).collect());
        let classes: Vec<u32> = (0..r as u32).map(|i| i % c as u32).collect();
        let sl = Stored::of(ctx, &logits, &cuts(true, &logits, c));
        let slab = Stored::new(ctx, &classes, &[]);
        let ss = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; 2 * r]), &[]);
        let sd = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; n]), &[]);
        let (pl, plab, ps, pd) = (sl.parts(), slab.parts(), ss.parts(), sd.parts());
        ctx.run(|e| {
            k.softmax_xent(
                e,
                &mat(&pl, r, c, F64),
                &labels(&plab, r as u64),
                &mat(&ps, r, 2, F64),
                &mat(&pd, r, c, F64),
                0.125,
            )
            .expect("softmax_xent")
        });
        let (mut stats, mut dl) = (Vec::new(), Vec::new());
        for (row, &label) in classes.iter().enumerate() {
            let z = &logits.values[row * c..(row + 1) * c];
            let max = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = z.iter().map(|v| (v - max).exp()).sum();
            stats.push(sum.ln() + max - z[label as usize]);
            let arg = z.iter().position(|&v| v == max).unwrap_or(0);
            stats.push(if arg == label as usize { 1.0 } else { 0.0 });
            for (j, v) in z.iter().enumerate() {
                let onehot = if j == label as usize { 1.0 } else { 0.0 };
                dl.push(((v - max).exp() / sum - onehot) * 0.125);
            }
        }
        assert_close_as(
            &format!("{name} f64 softmax stats"),
            F64,
            &ss.values(ctx, F64),
            &stats,
        );
        assert_close_as(
            &format!("{name} f64 softmax dlogits"),
            F64,
            &sd.values(ctx, F64),
            &dl,
        );

        // Column sums and the optimizers.
        let sb = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; c]), &[]);
        let pb = sb.parts();
        let mb = mat(&pb, 1, c, F64);
        ctx.run(|e| {
            k.colsum(e, &mat(&pd, r, c, F64), &mb, false)
                .expect("colsum")
        });
        let sums: Vec<f64> = (0..c)
            .map(|j| (0..r).map(|i| dl[i * c + j]).sum())
            .collect();
        assert_close_as(
            &format!("{name} f64 colsum"),
            F64,
            &sb.values(ctx, F64),
            &sums,
        );

        let p0 = Host::random(&mut rng, n, F64);
        let sp = Stored::of(ctx, &p0, &cuts(true, &p0, 1));
        let sm = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; n]), &[]);
        let sv = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; n]), &[]);
        let (pp, pm, pv) = (sp.parts(), sm.parts(), sv.parts());
        let (mp, mm, mv) = (
            mat(&pp, n, 1, F64),
            mat(&pm, n, 1, F64),
            mat(&pv, n, 1, F64),
        );
        let mut p = p0.values.clone();
        let (mut m, mut v) = (vec![0f64; n], vec![0f64; n]);
        let (b1, b2) = (f64::from(0.9f32), f64::from(0.999f32));
        let (lr, eps) = (f64::from(0.01f32), f64::from(1e-8f32));
        for step in 1..=3u32 {
            let h = Adam {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                step,
            };
            ctx.run(|e| {
                k.adam(e, &mp, &mat(&px, n, 1, F64), &mm, &mv, &h)
                    .expect("adam")
            });
            let bc1 = 1.0 - b1.powi(step as i32);
            let bc2 = 1.0 - b2.powi(step as i32);
            for j in 0..n {
                let g = x.values[j];
                m[j] = b1 * m[j] + (1.0 - b1) * g;
                v[j] = b2 * v[j] + (1.0 - b2) * g * g;
                p[j] -= lr * (m[j] / bc1) / ((v[j] / bc2).sqrt() + eps);
            }
        }
        ctx.run(|e| k.sgd(e, &mp, &mat(&px, n, 1, F64), 0.5).expect("sgd"));
        for (pj, xj) in p.iter_mut().zip(&x.values) {
            *pj -= f64::from(0.5f32) * xj;
        }
        assert_close_as(
            &format!("{name} f64 adam+sgd param"),
            F64,
            &sp.values(ctx, F64),
            &p,
        );
        assert_close_as(&format!("{name} f64 adam v"), F64, &sv.values(ctx, F64), &v);
    }
}

#[test]
fn without_optional_features_f64_is_refused_and_f16_is_packed() {
    let Some(ctx) = ctx() else { return };
    let gpu = gpumem_kernels::Gpu::new(&GpuOptions {
        skip_optional_features: true,
        ..Default::default()
    })
    .expect("the same adapter, without optional features");
    assert!(!gpu.features().contains(wgpu::Features::SHADER_F64));
    let k = Kernels::new(&gpu.device).expect("kernels");
    assert!(!k.supports_f64() && !k.uses_native_f16());
    let buf = gpumem_kernels::testing::storage_buffer(&gpu, 256);
    let parts = [gpumem_kernels::Part {
        buffer: &buf,
        offset: 0,
        len: 8 * 8,
    }];
    let m64 = Matrix::with_dtype(&parts, 2, 4, F64);
    let mut e = gpu.device.create_command_encoder(&Default::default());
    for r in [
        k.relu(&mut e, &m64, &m64),
        k.matmul(
            &mut e,
            &Gemm {
                a: Matrix::with_dtype(&parts, 2, 2, F64),
                trans_a: false,
                b: Matrix::with_dtype(&parts, 2, 2, F64),
                trans_b: false,
                c: Matrix::with_dtype(&parts, 2, 2, F64),
                accumulate: false,
                bias: None,
            },
        ),
    ] {
        match r {
            Err(KernelError::Unsupported(msg)) => assert!(msg.contains("SHADER_F64"), "{msg}"),
            other => panic!("float64 without SHADER_F64: {other:?}"),
        }
    }
    drop(e);
    // float16 runs there, packed: relu of 5 values, the 6th half untouched.
    let vals: Vec<half::f16> = [-1.0f32, 2.0, -3.0, 4.5, 0.25, 9.0]
        .iter()
        .map(|&v| half::f16::from_f32(v))
        .collect();
    gpumem_kernels::testing::write(&gpu, &buf, 0, &vals);
    let p5 = [gpumem_kernels::Part {
        buffer: &buf,
        offset: 0,
        len: 10,
    }];
    let m = Matrix::with_dtype(&p5, 1, 5, F16);
    let mut e = gpu.device.create_command_encoder(&Default::default());
    k.relu(&mut e, &m, &m).expect("packed relu");
    gpu.queue.submit([e.finish()]);
    let got: Vec<half::f16> = gpumem_kernels::testing::read(&gpu, &buf, 0, 12).expect("read");
    let got: Vec<f32> = got.iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, [0.0, 2.0, 0.0, 4.5, 0.25, 9.0]);
    assert!(gpu.take_errors().is_empty());
    let _ = ctx;
}

#[test]
fn flat_kernels_on_buffers_without_room_for_whole_quads() {
    let Some(ctx) = ctx() else { return };
    // Buffers that end with the tensor (7 float32, 5 float16 in 12 bytes): bindings cannot
    // be rounded up to whole quads, so the kernels declare scalar arrays.
    for (name, k) in [("full", &ctx.full), ("packed", &ctx.full_packed)] {
        for (dt, n) in [(F32, 7usize), (F16, 5)] {
            let x = Host::from_f64(dt, (0..n).map(|i| i as f64 - 2.5).collect());
            let mut bytes = x.bytes();
            bytes.resize(bytes.len().next_multiple_of(4), 0);
            let buf = gpumem_kernels::testing::storage_buffer(&ctx.gpu, bytes.len() as u64);
            gpumem_kernels::testing::write(&ctx.gpu, &buf, 0, &bytes);
            let parts = [gpumem_kernels::Part {
                buffer: &buf,
                offset: 0,
                len: dt.size() * n as u64,
            }];
            let m = mat(&parts, 1, n, dt);
            ctx.run(|e| {
                k.relu(e, &m, &m).expect("relu");
                k.scale(e, &m, 2.0).expect("scale");
            });
            let got: Vec<u8> =
                gpumem_kernels::testing::read(&ctx.gpu, &buf, 0, bytes.len() as u64).expect("read");
            let want: Vec<f64> = x.values.iter().map(|v| v.max(0.0) * 2.0).collect();
            assert_close_as(
                &format!("{name} {dt:?} relu+scale"),
                dt,
                &decode(dt, &got[..dt.size() as usize * n]),
                &want,
            );
            // The half word after an odd float16 tensor keeps its bits.
            assert!(got[dt.size() as usize * n..].iter().all(|&b| b == 0));
        }
    }
}
