//! The `cpu` backing's kernels: plain Rust over host segments, the numerical reference for
//! the WGSL shaders. Matmul is `matrixmultiply::sgemm`, whose strides make transposes free.
//!
//! Shapes were checked by `ops`; here only the memory is resolved.

use super::ops::{AdamStep, Matmul};
use crate::device::{Backing, Error};
use crate::tensor::Tensor;

/// A pointer to a tensor's values in host memory.
fn ptr<T>(t: &Tensor, count: u64) -> Result<*mut T, Error> {
    let p = t.placement();
    let inner = t.device().borrow();
    let Backing::Cpu(store) = inner.alloc.store() else {
        return Err(Error::Device(format!("{}: not a cpu tensor", t.label())));
    };
    store
        .ptr::<T>(p.segment, p.offset, count as usize)
        .ok_or_else(|| Error::Device(format!("{}: block outside its segment", t.label())))
}

// SAFETY (for the two helpers below and every use of them): a tensor's values live in its own
// allocator block; live blocks never overlap (the allocator's invariant, property-tested),
// and `ops` refuses an output that is also an input. So a mutable view of an output never
// aliases any other view made for the same operation.
fn view(t: &Tensor) -> Result<&[f32], Error> {
    Ok(unsafe { std::slice::from_raw_parts(ptr::<f32>(t, t.len())?, t.len() as usize) })
}

#[allow(clippy::mut_from_ref)]
fn view_mut(t: &Tensor) -> Result<&mut [f32], Error> {
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr::<f32>(t, t.len())?, t.len() as usize) })
}

pub fn matmul(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
) -> Result<(), Error> {
    let (m, n) = (c.rows() as usize, c.cols() as usize);
    let k = if spec.trans_a { a.rows() } else { a.cols() } as usize;
    // Row and column strides of op(A) and op(B) in their stored row-major layouts.
    let (rsa, csa) = if spec.trans_a {
        (1, m as isize)
    } else {
        (k as isize, 1)
    };
    let (rsb, csb) = if spec.trans_b {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    let beta = if spec.accumulate { 1.0 } else { 0.0 };
    let (av, bv, cv) = (view(a)?, view(b)?, view_mut(c)?);
    // SAFETY: the slices hold m·k, k·n and m·n values laid out as the strides say.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            av.as_ptr(),
            rsa,
            csa,
            bv.as_ptr(),
            rsb,
            csb,
            beta,
            cv.as_mut_ptr(),
            n as isize,
            1,
        );
    }
    if let Some(bias) = bias {
        let bv = view(bias)?;
        for row in cv.chunks_exact_mut(n) {
            row.iter_mut().zip(bv).for_each(|(c, b)| *c += b);
        }
    }
    Ok(())
}

pub fn relu(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    let (s, d) = (view(src)?, view_mut(dst)?);
    d.iter_mut().zip(s).for_each(|(d, &s)| *d = s.max(0.0));
    Ok(())
}

pub fn relu_backward(grad: &Tensor, activation: &Tensor) -> Result<(), Error> {
    let (g, a) = (view_mut(grad)?, view(activation)?);
    g.iter_mut().zip(a).for_each(|(g, &a)| {
        if a <= 0.0 {
            *g = 0.0;
        }
    });
    Ok(())
}

pub fn softmax_xent(
    logits: &Tensor,
    labels: &Tensor,
    stats: &Tensor,
    dlogits: &Tensor,
    scale: f32,
) -> Result<(), Error> {
    let c = logits.cols() as usize;
    let (l, s, d) = (view(logits)?, view_mut(stats)?, view_mut(dlogits)?);
    // SAFETY: labels is a distinct uint32 tensor of `rows` values (checked by `ops`).
    let y = unsafe {
        std::slice::from_raw_parts(ptr::<u32>(labels, labels.len())?, labels.len() as usize)
    };
    for (row, ((lr, dr), (sr, &label))) in l
        .chunks_exact(c)
        .zip(d.chunks_exact_mut(c))
        .zip(s.chunks_exact_mut(2).zip(y))
        .enumerate()
    {
        let label = label as usize;
        if label >= c {
            return Err(Error::Invalid(format!(
                "label {label} of row {row} is not below {c}"
            )));
        }
        let max = lr.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = lr.iter().map(|&v| (v - max).exp()).sum();
        let log_sum = sum.ln() + max;
        let argmax = lr
            .iter()
            .enumerate()
            .fold(0, |best, (j, &v)| if v > lr[best] { j } else { best });
        sr[0] = log_sum - lr[label];
        sr[1] = if argmax == label { 1.0 } else { 0.0 };
        for (j, (dv, &v)) in dr.iter_mut().zip(lr).enumerate() {
            let p = (v - log_sum).exp();
            *dv = (p - if j == label { 1.0 } else { 0.0 }) * scale;
        }
    }
    Ok(())
}

pub fn colsum(src: &Tensor, dst: &Tensor, accumulate: bool) -> Result<(), Error> {
    let n = src.cols() as usize;
    let (s, d) = (view(src)?, view_mut(dst)?);
    // Accumulate in f64 so a million-row sum does not drift.
    let mut acc = vec![0f64; n];
    for row in s.chunks_exact(n) {
        acc.iter_mut()
            .zip(row)
            .for_each(|(a, &v)| *a += f64::from(v));
    }
    for (d, a) in d.iter_mut().zip(acc) {
        *d = if accumulate { *d + a as f32 } else { a as f32 };
    }
    Ok(())
}

pub fn sgd(param: &Tensor, grad: &Tensor, lr: f32) -> Result<(), Error> {
    let (p, g) = (view_mut(param)?, view(grad)?);
    p.iter_mut().zip(g).for_each(|(p, &g)| *p -= lr * g);
    Ok(())
}

pub fn adam(
    param: &Tensor,
    grad: &Tensor,
    m: &Tensor,
    v: &Tensor,
    hp: AdamStep,
) -> Result<(), Error> {
    let (p, g, m, v) = (view_mut(param)?, view(grad)?, view_mut(m)?, view_mut(v)?);
    let bc1 = 1.0 - hp.beta1.powi(hp.step as i32);
    let bc2 = 1.0 - hp.beta2.powi(hp.step as i32);
    for i in 0..p.len() {
        m[i] = hp.beta1 * m[i] + (1.0 - hp.beta1) * g[i];
        v[i] = hp.beta2 * v[i] + (1.0 - hp.beta2) * g[i] * g[i];
        let m_hat = m[i] / bc1;
        let v_hat = v[i] / bc2;
        p[i] -= hp.lr * m_hat / (v_hat.sqrt() + hp.eps);
    }
    Ok(())
}

pub fn scale(x: &Tensor, factor: f32) -> Result<(), Error> {
    view_mut(x)?.iter_mut().for_each(|v| *v *= factor);
    Ok(())
}

pub fn add(dst: &Tensor, src: &Tensor) -> Result<(), Error> {
    let (d, s) = (view_mut(dst)?, view(src)?);
    d.iter_mut().zip(s).for_each(|(d, &s)| *d += s);
    Ok(())
}

pub fn zero(x: &Tensor) -> Result<(), Error> {
    let p = ptr::<u8>(x, x.bytes())?;
    // SAFETY: the tensor's own bytes, as above.
    unsafe { std::ptr::write_bytes(p, 0, x.bytes() as usize) };
    Ok(())
}
