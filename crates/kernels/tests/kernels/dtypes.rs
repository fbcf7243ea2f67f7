//! float16 (native and packed) and float64 operands against f64 references, on odd shapes,
//! tensors split mid-row over several buffers, and tiny limits; the tolerance rule is
//! per result dtype (`common::tolerance`). Packed float16 is checked under the device's
//! and tiny limits (`full_packed`, `packed`); the sentinels around every part catch a
//! kernel that clobbers the other half of a tensor's last word.

use gpumem_kernels::{Adam, DType, Gemm, GpuOptions, KernelError, Kernels, MatmulKernel, Matrix};

use crate::common::*;

pub mod float64;

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
