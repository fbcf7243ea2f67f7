//! The fused products (`Kernels::matmul_relu`, `Kernels::matmul_colsum`) write both outputs
//! as the separate kernels would, on the shapes they fuse (one dispatch) and on the ones
//! they hand to the separate kernels (split buffers, odd n, larger skinny dimensions).

use gpumem_kernels::{Gemm, KernelLimits, Kernels};

use crate::common::*;

/// (m, k, n, bias, split): the lesson's first layer at batch 32 and odd variations.
/// Rows of 33 and 70 (64 + 6) leave one row after the pairs of the k = 2 loop.
const RELU_CASES: [(usize, usize, usize, bool, bool); 9] = [
    (32, 2, 2000, true, false),
    (70, 2, 12, true, false),
    (130, 1, 8, false, false),
    (5, 3, 16, true, false),
    (67, 4, 40, true, false),
    (9, 2, 6, true, false),
    (40, 2, 24, true, true),
    (33, 2, 16, true, false),
    (65, 2, 8, false, false),
];

fn reference(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize), ta: bool) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|kk| {
                    let x = if ta { a[kk * m + i] } else { a[i * k + kk] };
                    f64::from(x) * f64::from(b[kk * n + j])
                })
                .sum();
        }
    }
    c
}

fn cuts(split: bool, len: usize, row: usize) -> Vec<u64> {
    if split {
        awkward_cuts(4 * len as u64, 4 * row as u64)
    } else {
        Vec::new()
    }
}

/// Runs `matmul_relu` on one case; returns the dispatches it recorded.
fn check_relu(
    ctx: &Ctx,
    name: &str,
    kernels: &Kernels,
    case: (usize, usize, usize, bool, bool),
) -> u64 {
    let (m, k, n, with_bias, split) = case;
    let mut rng = rng(m as u64 * 31 + n as u64);
    let (a, b, bias) = (rng.vec(m * k), rng.vec(k * n), rng.vec(n));
    let sa = Stored::new(ctx, &a, &cuts(split, a.len(), k));
    let sb = Stored::new(ctx, &b, &cuts(split, b.len(), n));
    let sc = Stored::new(ctx, &vec![0f32; m * n], &cuts(split, m * n, n));
    let sr = Stored::new(ctx, &vec![0f32; m * n], &cuts(split, m * n, n));
    let sbias = Stored::new(ctx, &bias, &[]);
    let (pa, pb, pc, pr, pbias) = (
        sa.parts(),
        sb.parts(),
        sc.parts(),
        sr.parts(),
        sbias.parts(),
    );
    let g = Gemm {
        a: matrix(&pa, m as u64, k as u64),
        trans_a: false,
        b: matrix(&pb, k as u64, n as u64),
        trans_b: false,
        c: matrix(&pc, m as u64, n as u64),
        accumulate: false,
        bias: with_bias.then(|| matrix(&pbias, 1, n as u64)),
    };
    let before = kernels.counters().dispatches;
    ctx.run(|e| {
        kernels
            .matmul_relu(e, &g, &matrix(&pr, m as u64, n as u64))
            .expect("matmul_relu")
    });
    let mut want = reference(&a, &b, (m, k, n), false);
    if with_bias {
        for (i, w) in want.iter_mut().enumerate() {
            *w += f64::from(bias[i % n]);
        }
    }
    let what = format!("{name} matmul_relu {m}x{k}x{n} bias={with_bias} split={split}");
    assert_close(&format!("{what}: c"), &sc.read::<f32>(ctx), &want);
    let relu: Vec<f64> = want.iter().map(|&x| x.max(0.0)).collect();
    assert_close(&format!("{what}: relu"), &sr.read::<f32>(ctx), &relu);
    kernels.counters().dispatches - before
}

#[test]
fn matmul_relu_writes_the_product_and_its_relu() {
    let Some(ctx) = ctx() else { return };
    for (name, kernels) in ctx.all() {
        // 2000 columns are wider than the tiny limits' 4 KiB binding.
        for case in RELU_CASES
            .into_iter()
            .filter(|c| device_limits(kernels) || c.2 < 1000)
        {
            check_relu(ctx, name, kernels, case);
        }
    }
}

/// Kernels of their own (the shared ones' counters see the other tests' dispatches), with
/// the adapter's plans and with a GPU's.
#[test]
fn the_lesson_layers_forward_and_gradients_are_one_dispatch_each() {
    let Some(ctx) = ctx() else { return };
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    let gpu = own
        .reuse_with_limits(KernelLimits {
            cpu_plans: false,
            ..*own.limits()
        })
        .expect("kernels with a GPU's plans");
    for (name, k) in [("own", &own), ("own gpu_plans", &gpu)] {
        assert_eq!(check_relu(ctx, name, k, RELU_CASES[0]), 1);
        assert_eq!(check_colsum(ctx, name, k, COLSUM_CASES[0]), 1);
        // The output layer's at batch 32: k is too short for either plan to split.
        assert_eq!(check_colsum(ctx, name, k, COLSUM_CASES[7]), 1);
        // Split over buffers: the product and the second operation run separately.
        assert!(check_relu(ctx, name, k, RELU_CASES[6]) >= 2);
        assert!(check_colsum(ctx, name, k, COLSUM_CASES[5]) >= 2);
        assert!(check_colsum(ctx, name, k, COLSUM_CASES[12]) >= 2);
    }
    // A long k: a GPU's plan splits the product (partial sums, their sum), so the column
    // sums run apart; a CPU adapter's plan keeps it whole and fused.
    let long = COLSUM_CASES[13];
    assert!(check_colsum(ctx, "own gpu_plans", &gpu, long) >= 3);
    if own.limits().cpu_plans {
        assert_eq!(check_colsum(ctx, "own", &own, long), 1);
    }
}

/// (m, k, n, split): the lesson's first-layer gradient at batch 32 and variations.
/// k of 33 leaves one row after the pairs of the m = 2 loop; from index 7, the output
/// layer's gradient at batch 32 (m = 2000, n = 2) and variations of n ≤ 4 (odd k leaves a
/// row after the n = 2 pairs; n of 1, 3 and 4 store C element by element), the last with
/// a k long enough for a GPU's plan to split.
const COLSUM_CASES: [(usize, usize, usize, bool); 14] = [
    (2, 32, 2000, false),
    (1, 7, 8, false),
    (3, 65, 12, false),
    (4, 33, 20, false),
    (2, 9, 6, false),
    (2, 40, 24, true),
    (2, 33, 8, false),
    (2000, 32, 2, false),
    (40, 33, 2, false),
    (36, 9, 1, false),
    (20, 11, 3, false),
    (264, 6, 4, false),
    (32, 10, 2, true),
    (400, 1024, 2, false),
];

/// Runs `matmul_colsum` (c = aᵀ·b, sums = column sums of b); returns its dispatches.
fn check_colsum(
    ctx: &Ctx,
    name: &str,
    kernels: &Kernels,
    case: (usize, usize, usize, bool),
) -> u64 {
    let (m, k, n, split) = case;
    let mut rng = rng(m as u64 * 17 + k as u64);
    let (a, b) = (rng.vec(k * m), rng.vec(k * n));
    let sa = Stored::new(ctx, &a, &cuts(split, a.len(), m));
    let sb = Stored::new(ctx, &b, &cuts(split, b.len(), n));
    let sc = Stored::new(ctx, &vec![0f32; m * n], &cuts(split, m * n, n));
    let ss = Stored::new(ctx, &vec![0f32; n], &[]);
    let (pa, pb, pc, ps) = (sa.parts(), sb.parts(), sc.parts(), ss.parts());
    let g = Gemm {
        a: matrix(&pa, k as u64, m as u64),
        trans_a: true,
        b: matrix(&pb, k as u64, n as u64),
        trans_b: false,
        c: matrix(&pc, m as u64, n as u64),
        accumulate: false,
        bias: None,
    };
    let before = kernels.counters().dispatches;
    ctx.run(|e| {
        kernels
            .matmul_colsum(e, &g, &matrix(&ps, 1, n as u64))
            .expect("matmul_colsum")
    });
    let what = format!("{name} matmul_colsum {m}x{k}x{n} split={split}");
    let want = reference(&a, &b, (m, k, n), true);
    assert_close(&format!("{what}: c"), &sc.read::<f32>(ctx), &want);
    let sums: Vec<f64> = (0..n)
        .map(|j| (0..k).map(|r| f64::from(b[r * n + j])).sum())
        .collect();
    assert_close(&format!("{what}: sums"), &ss.read::<f32>(ctx), &sums);
    kernels.counters().dispatches - before
}

#[test]
fn matmul_colsum_writes_the_product_and_the_column_sums() {
    let Some(ctx) = ctx() else { return };
    for (name, kernels) in ctx.all() {
        for case in COLSUM_CASES
            .into_iter()
            .filter(|c| device_limits(kernels) || (c.0 < 1000 && c.2 < 1000))
        {
            check_colsum(ctx, name, kernels, case);
        }
    }
}

/// WebGPU's downlevel limits bind four storage buffers per stage: the fused kernels need
/// five, so there the two separate kernels run (and give the same values).
#[test]
fn downlevel_devices_run_them_unfused() {
    let Some(ctx) = downlevel_ctx() else { return };
    assert!(ctx.gpu.device.limits().max_storage_buffers_per_shader_stage < 5);
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    assert!(check_relu(ctx, "downlevel", &own, RELU_CASES[1]) >= 2);
    assert!(check_colsum(ctx, "downlevel", &own, COLSUM_CASES[2]) >= 2);
}
