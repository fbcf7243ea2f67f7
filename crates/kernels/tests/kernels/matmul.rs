use gpumem_kernels::{Gemm, Kernels, MatmulKernel};

use crate::common::*;

/// op(a)·op(b) (+ bias) (+ c0) in f64.
#[allow(clippy::too_many_arguments)]
fn reference(
    a: &[f32],
    ta: bool,
    b: &[f32],
    tb: bool,
    (m, k, n): (usize, usize, usize),
    bias: Option<&[f32]>,
    c0: Option<&[f32]>,
) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f64;
            for kk in 0..k {
                let x = if ta { a[kk * m + i] } else { a[i * k + kk] };
                let y = if tb { b[j * k + kk] } else { b[kk * n + j] };
                s += f64::from(x) * f64::from(y);
            }
            s += bias.map_or(0.0, |b| f64::from(b[j]));
            s += c0.map_or(0.0, |c| f64::from(c[i * n + j]));
            c[i * n + j] = s;
        }
    }
    c
}

struct Case {
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
    accumulate: bool,
    bias: bool,
    /// Split every tensor over several buffers, cutting through rows.
    split: bool,
}

fn check(ctx: &Ctx, name: &str, kernels: &Kernels, kernel: MatmulKernel, case: &Case, seed: u64) {
    let Case {
        m, k, n, ta, tb, ..
    } = *case;
    let mut rng = rng(seed);
    let a = rng.vec(m * k);
    let b = rng.vec(k * n);
    let c0 = rng.vec(m * n);
    let bias = rng.vec(n);
    let cuts = |len: usize, row: usize| {
        if case.split {
            awkward_cuts(4 * len as u64, 4 * row as u64)
        } else {
            Vec::new()
        }
    };
    let (a_rows, a_cols) = if ta { (k, m) } else { (m, k) };
    let (b_rows, b_cols) = if tb { (n, k) } else { (k, n) };
    let sa = Stored::new(ctx, &a, &cuts(a.len(), a_cols));
    let sb = Stored::new(ctx, &b, &cuts(b.len(), b_cols));
    let sc = Stored::new(ctx, &c0, &cuts(c0.len(), n));
    let sbias = Stored::new(ctx, &bias, &cuts(n, n));
    let (pa, pb, pc, pbias) = (sa.parts(), sb.parts(), sc.parts(), sbias.parts());
    let g = Gemm {
        a: matrix(&pa, a_rows as u64, a_cols as u64),
        trans_a: ta,
        b: matrix(&pb, b_rows as u64, b_cols as u64),
        trans_b: tb,
        c: matrix(&pc, m as u64, n as u64),
        accumulate: case.accumulate,
        bias: case.bias.then(|| matrix(&pbias, 1, n as u64)),
    };
    ctx.run(|e| kernels.matmul_with(e, &g, kernel).expect("matmul"));
    let got: Vec<f32> = sc.read(ctx);
    let want = reference(
        &a,
        ta,
        &b,
        tb,
        (m, k, n),
        case.bias.then_some(&bias[..]),
        case.accumulate.then_some(&c0[..]),
    );
    let what = format!(
        "{name} {kernel:?} {m}x{k}x{n} ta={ta} tb={tb} acc={} bias={} split={}",
        case.accumulate, case.bias, case.split
    );
    assert_close(&what, &got, &want);
}

/// (m, k, n). The last eight are the skinny kernels' fast paths: k of 2 and 3 over whole
/// quads of C with two row blocks (k = 2 once with an odd last block: pairs of A's rows and
/// a single one), n = 2 and 3 with split-k and k tails (n = 2 once with k a multiple of 4:
/// B's two dense columns loaded as quads), and m = 2 and 4 over whole quads of B.
const SHAPES: [(usize, usize, usize); 16] = [
    (1, 1, 1),
    (3, 5, 7),
    (17, 33, 9),
    (33, 17, 64),
    (8, 4, 4),
    (40, 36, 20),
    (64, 64, 64),
    (35, 41, 68),
    (70, 2, 12),
    (67, 2, 8),
    (66, 3, 8),
    (40, 302, 2),
    (9, 260, 2),
    (36, 130, 3),
    (2, 37, 16),
    (4, 9, 20),
];

fn forms() -> [(bool, bool); 4] {
    [(false, false), (true, false), (false, true), (true, true)]
}

#[test]
fn all_forms_odd_shapes_device_limits() {
    if let Some(ctx) = ctx() {
        all_forms_odd_shapes_device_limits_on(ctx);
    }
}

pub fn all_forms_odd_shapes_device_limits_on(ctx: &Ctx) {
    let mut seed = 1;
    for (m, k, n) in SHAPES {
        for (ta, tb) in forms() {
            for (accumulate, bias) in [(false, false), (true, false), (false, true), (true, true)] {
                seed += 1;
                let case = Case {
                    m,
                    k,
                    n,
                    ta,
                    tb,
                    accumulate,
                    bias,
                    split: false,
                };
                check(ctx, "full", &ctx.full, MatmulKernel::Auto, &case, seed);
                let gpu = &ctx.gpu_plans;
                check(ctx, "gpu_plans", gpu, MatmulKernel::Auto, &case, seed);
            }
        }
    }
}

#[test]
fn naive_kernel_matches() {
    let Some(ctx) = ctx() else { return };
    for (i, (m, k, n)) in SHAPES.into_iter().enumerate() {
        for (ta, tb) in forms() {
            let case = Case {
                m,
                k,
                n,
                ta,
                tb,
                accumulate: i % 2 == 1,
                bias: i % 3 == 0,
                split: false,
            };
            check(
                ctx,
                "full",
                &ctx.full,
                MatmulKernel::Naive,
                &case,
                100 + i as u64,
            );
        }
    }
}

#[test]
fn tiny_limits_split_buffers() {
    if let Some(ctx) = ctx() {
        tiny_limits_split_buffers_on(ctx);
    }
}

pub fn tiny_limits_split_buffers_on(ctx: &Ctx) {
    // 4 KiB bindings: 70×48 floats are 13 KiB; rows of 180..272 bytes straddle the cuts.
    let shapes = [(70, 48, 36), (33, 68, 45), (9, 100, 12), (64, 45, 64)];
    let mut seed = 500;
    for (name, kernels) in [("tiny", &ctx.tiny), ("plain", &ctx.plain)] {
        for (m, k, n) in shapes {
            for (ta, tb) in forms() {
                for split in [false, true] {
                    seed += 1;
                    let case = Case {
                        m,
                        k,
                        n,
                        ta,
                        tb,
                        accumulate: seed % 2 == 0,
                        bias: seed % 3 != 0,
                        split,
                    };
                    check(ctx, name, kernels, MatmulKernel::Auto, &case, seed);
                }
            }
        }
    }
}

#[test]
fn long_reduction_accumulates_over_pieces() {
    let Some(ctx) = ctx() else { return };
    // dW = Aᵀ·dZ with a 3001-row batch: hundreds of reduction pieces under tiny limits,
    // and a k tail for the naive kernel.
    for (i, (name, kernels)) in ctx.all().into_iter().enumerate() {
        let case = Case {
            m: 12,
            k: 3001,
            n: 8,
            ta: true,
            tb: false,
            accumulate: false,
            bias: false,
            split: true,
        };
        check(
            ctx,
            name,
            kernels,
            MatmulKernel::Auto,
            &case,
            900 + i as u64,
        );
    }
}

#[test]
fn larger_than_one_tile_everywhere() {
    let Some(ctx) = ctx() else { return };
    // Several 32-row tiles and, under tiny limits, more tiles than workgroups (3 per
    // dimension), so the grid-stride loops run.
    for (i, (name, kernels)) in ctx.all().into_iter().enumerate() {
        for (ta, tb) in forms().into_iter().take(3) {
            let case = Case {
                m: 100,
                k: 24,
                n: 200,
                ta,
                tb,
                accumulate: false,
                bias: true,
                split: false,
            };
            check(
                ctx,
                name,
                kernels,
                MatmulKernel::Auto,
                &case,
                950 + i as u64,
            );
        }
    }
}

#[test]
fn zero_sized_reduction_clears_or_keeps() {
    let Some(ctx) = ctx() else { return };
    for accumulate in [false, true] {
        let case = Case {
            m: 5,
            k: 0,
            n: 3,
            ta: false,
            tb: false,
            accumulate,
            bias: false,
            split: false,
        };
        check(ctx, "full", &ctx.full, MatmulKernel::Auto, &case, 7);
    }
}

/// Buffers that end where their matrices end (1×7 · 7×3 = 1×3 float32: 12 bytes for C), so a
/// binding cannot be rounded up to whole quads: every kernel must declare scalar arrays.
#[test]
fn every_kernel_on_buffers_without_room_for_whole_quads() {
    let Some(ctx) = ctx() else { return };
    let (m, k, n) = (1u64, 7u64, 3u64);
    let a: Vec<f32> = (0..m * k).map(|i| i as f32 * 0.5 - 1.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| 1.0 - i as f32 * 0.25).collect();
    let want: Vec<f64> = (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            (0..k)
                .map(|p| f64::from(a[(i * k + p) as usize]) * f64::from(b[(p * n + j) as usize]))
                .sum()
        })
        .collect();
    let exact = |values: &[f32]| {
        let buf = gpumem_kernels::testing::storage_buffer(&ctx.gpu, 4 * values.len() as u64);
        gpumem_kernels::testing::write(&ctx.gpu, &buf, 0, values);
        buf
    };
    for kernel in [MatmulKernel::Naive, MatmulKernel::Auto] {
        let (ab, bb, cb) = (exact(&a), exact(&b), exact(&[0.0; 3]));
        let part = |buf, len| {
            [gpumem_kernels::Part {
                buffer: buf,
                offset: 0,
                len,
            }]
        };
        let (pa, pb, pc) = (
            part(&ab, 4 * m * k),
            part(&bb, 4 * k * n),
            part(&cb, 4 * m * n),
        );
        let g = Gemm {
            a: matrix(&pa, m, k),
            trans_a: false,
            b: matrix(&pb, k, n),
            trans_b: false,
            c: matrix(&pc, m, n),
            accumulate: false,
            bias: None,
        };
        ctx.run(|e| ctx.full.matmul_with(e, &g, kernel).expect("matmul"));
        let got: Vec<u8> =
            gpumem_kernels::testing::read(&ctx.gpu, &cb, 0, 4 * m * n).expect("read");
        let got: Vec<f32> = bytemuck::cast_slice(&got).to_vec();
        assert_close(&format!("{kernel:?}"), &got, &want);
        assert!(ctx.gpu.take_errors().is_empty(), "{kernel:?}: wgpu errors");
    }
}
