//! float64 operands, devices without the optional features, and flat kernels on buffers
//! without room for whole quads.

use super::*;

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

/// Rows and columns of the step kernels' activations.
const R: usize = 37;
const C: usize = 5;

pub fn float64_step_kernels_on(ctx: &Ctx) {
    if !ctx.full.supports_f64() {
        eprintln!("no SHADER_F64 on this adapter: float64_step_kernels skipped");
        return;
    }
    for (name, k) in [("full", &ctx.full), ("tiny", &ctx.tiny)] {
        let mut rng = rng(6000);
        let x = Host::random(&mut rng, R * C, F64);
        let sx = Stored::of(ctx, &x, &cuts(true, &x, C));
        f64_elementwise(ctx, name, k, &x, &sx);
        let (sd, dl) = f64_softmax_xent(ctx, name, k, &x);
        f64_colsum(ctx, name, k, &sd, &dl);
        f64_optimizers(ctx, name, k, &mut rng, &x, &sx);
    }
}

/// ReLU, add and scale of `x` (stored as `sx`).
fn f64_elementwise(ctx: &Ctx, name: &str, k: &Kernels, x: &Host, sx: &Stored) {
    let n = R * C;
    let sy = Stored::of(ctx, &Host::from_f64(F64, vec![0.0; n]), &[]);
    let (px, py) = (sx.parts(), sy.parts());
    let (mx, my) = (mat(&px, R, C, F64), mat(&py, R, C, F64));
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
}

/// Softmax cross-entropy of `7 x` with exp and log written out in f64; the gradient of the
/// logits, stored and as expected.
fn f64_softmax_xent(ctx: &Ctx, name: &str, k: &Kernels, x: &Host) -> (Stored, Vec<f64>) {
    let (r, c, n) = (R, C, R * C);
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
    (sd, dl)
}

/// Column sums of the logits' gradient `dl` (stored as `sd`).
fn f64_colsum(ctx: &Ctx, name: &str, k: &Kernels, sd: &Stored, dl: &[f64]) {
    let (r, c) = (R, C);
    let pd = sd.parts();
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
}

/// Three Adam steps and one SGD step with `x` (stored as `sx`) as the gradient.
fn f64_optimizers(
    ctx: &Ctx,
    name: &str,
    k: &Kernels,
    rng: &mut gpumem_kernels::testing::Rng,
    x: &Host,
    sx: &Stored,
) {
    let n = R * C;
    let px = sx.parts();
    let p0 = Host::random(rng, n, F64);
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
