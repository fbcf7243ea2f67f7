//! The `wgpu` backing's kernels: each operation resolves its tensors to views of the
//! segment buffers and records WGSL dispatches (gpumem-kernels) into the step's one pending
//! command encoder. Nothing is submitted until data must cross to or from the host, so a
//! training step is one submission and one wait (reading its loss). Dispatches are recorded
//! under the store's step cache, so a steady step creates no bind group and no buffer.
//!
//! Every dtype the engine stores runs here: float16 (mixed precision's activations and
//! their gradients; native with `SHADER_F16`, packed two per `u32` without), float32, and
//! float64 where the adapter has `SHADER_F64` — without it a float64 tensor's first
//! operation is a clear [`Error::Unsupported`] naming the missing feature. Kernels compute in
//! f32 (f64 when any operand is float64), as the cpu backing does.

use super::spec::{AdamStep, Matmul};
use crate::device::parts;
use crate::device::{Backing, BufferStore};
use crate::error::Error;
use crate::tensor::{DType, Tensor};
use gpumem_kernels::{DType as KernelDType, Gemm, KernelError, Kernels, Matrix, Part};

fn kernel_error(e: KernelError) -> Error {
    match e {
        KernelError::Shape(_) | KernelError::DType { .. } | KernelError::RowTooLarge { .. } => {
            Error::Shape(format!("wgpu kernel: {e}"))
        }
        // What this adapter cannot do (float64 without SHADER_F64): a setup to change.
        KernelError::Unsupported(what) => Error::Unsupported(what),
        other => Error::Device(format!("wgpu kernel: {other}")),
    }
}

/// The parts of `t`'s bytes, as kernel views.
fn tensor_parts<'s>(store: &'s BufferStore, t: &Tensor) -> Result<Vec<Part<'s>>, Error> {
    let p = t.placement();
    Ok(parts(store, p.segment, p.offset, t.bytes())?
        .into_iter()
        .map(|r| Part {
            buffer: r.buffer,
            offset: r.offset,
            len: r.len,
        })
        .collect())
}

fn matrix<'a>(t: &Tensor, parts: &'a [Part<'a>]) -> Matrix<'a> {
    let dtype = match t.dtype() {
        DType::U32 => return Matrix::labels(parts, t.len()),
        DType::I64 => return Matrix::labels_i64(parts, t.len()),
        DType::F16 => KernelDType::F16,
        DType::F32 => KernelDType::F32,
        DType::F64 => KernelDType::F64,
    };
    Matrix::with_dtype(parts, t.rows(), t.cols(), dtype)
}

/// Runs `record` with the kernels, the pending encoder and the views of `tensors`.
fn with<const N: usize>(
    tensors: [&Tensor; N],
    record: impl FnOnce(&Kernels, &mut wgpu::CommandEncoder, [Matrix<'_>; N]) -> Result<(), KernelError>,
) -> Result<(), Error> {
    let device = tensors[0].device().clone();
    let inner = device.borrow();
    let Backing::Wgpu(store) = inner.alloc.store() else {
        return Err(Error::Device("not a wgpu tensor".into()));
    };
    // A lost device fails here, as a value, before anything is recorded on it.
    store.check()?;
    let all: Vec<Vec<Part<'_>>> = tensors
        .iter()
        .map(|t| tensor_parts(store, t))
        .collect::<Result<_, _>>()?;
    let views: [Matrix<'_>; N] = std::array::from_fn(|i| matrix(tensors[i], &all[i]));
    let kernels = store.kernels()?;
    // Under the store's step cache: bind groups and uniforms reused from step to step.
    store.record(|encoder| {
        kernels
            .recording(store.step_cache(), |k| record(k, encoder, views))
            .map_err(kernel_error)
    })
}

/// `c = op(a)·op(b) (+ bias)` as the kernels take it.
fn gemm<'a>(
    spec: Matmul,
    a: Matrix<'a>,
    b: Matrix<'a>,
    c: Matrix<'a>,
    bias: Option<Matrix<'a>>,
) -> Gemm<'a> {
    Gemm {
        a,
        trans_a: spec.trans_a,
        b,
        trans_b: spec.trans_b,
        c,
        accumulate: false,
        bias,
    }
}

pub fn matmul(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
) -> Result<(), Error> {
    match bias {
        Some(bias) => with([a, b, c, bias], |k, e, [a, b, c, bias]| {
            k.matmul(e, &gemm(spec, a, b, c, Some(bias)))
        }),
        None => with([a, b, c], |k, e, [a, b, c]| {
            k.matmul(e, &gemm(spec, a, b, c, None))
        }),
    }
}

/// The product and its ReLU: one kernel where the shape allows (`Kernels::matmul_relu`).
pub fn matmul_relu(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
) -> Result<(), Error> {
    match bias {
        Some(bias) => with([a, b, c, bias, out], |k, e, [a, b, c, bias, out]| {
            k.matmul_relu(e, &gemm(spec, a, b, c, Some(bias)), &out)
        }),
        None => with([a, b, c, out], |k, e, [a, b, c, out]| {
            k.matmul_relu(e, &gemm(spec, a, b, c, None), &out)
        }),
    }
}

/// A weight's gradient and its bias's: one kernel where the shape allows
/// (`Kernels::matmul_colsum`).
pub fn matmul_colsum(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    sums: &Tensor,
) -> Result<(), Error> {
    with([a, b, c, sums], |k, e, [a, b, c, sums]| {
        k.matmul_colsum(e, &gemm(spec, a, b, c, None), &sums)
    })
}

pub fn relu(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    with([src, dst], |k, e, [s, d]| k.relu(e, &s, &d))
}

pub fn sgd(param: &Tensor, grad: &Tensor, lr: f32) -> Result<(), Error> {
    with([param, grad], |k, e, [p, g]| k.sgd(e, &p, &g, lr))
}

/// Every pair's update, four pairs a kernel where they allow it (`Kernels::sgd_foreach`).
pub fn sgd_foreach(pairs: &[(&Tensor, &Tensor)], lr: f32) -> Result<(), Error> {
    let Some(&(first, _)) = pairs.first() else {
        return Ok(());
    };
    let device = first.device().clone();
    let inner = device.borrow();
    let Backing::Wgpu(store) = inner.alloc.store() else {
        return Err(Error::Device("not a wgpu tensor".into()));
    };
    store.check()?;
    let parts: Vec<(Vec<Part<'_>>, Vec<Part<'_>>)> = pairs
        .iter()
        .map(|&(p, g)| Ok((tensor_parts(store, p)?, tensor_parts(store, g)?)))
        .collect::<Result<_, Error>>()?;
    let views: Vec<(Matrix<'_>, Matrix<'_>)> = pairs
        .iter()
        .zip(&parts)
        .map(|(&(p, g), (pp, gp))| (matrix(p, pp), matrix(g, gp)))
        .collect();
    let kernels = store.kernels()?;
    store.record(|encoder| {
        kernels
            .recording(store.step_cache(), |k| k.sgd_foreach(encoder, &views, lr))
            .map_err(kernel_error)
    })
}

pub fn adam(
    param: &Tensor,
    grad: &Tensor,
    m: &Tensor,
    v: &Tensor,
    hp: AdamStep,
) -> Result<(), Error> {
    let h = adam_hyper(hp);
    with([param, grad, m, v], |k, e, [p, g, m, v]| {
        k.adam(e, &p, &g, &m, &v, &h)
    })
}

fn adam_hyper(hp: AdamStep) -> gpumem_kernels::Adam {
    gpumem_kernels::Adam {
        lr: hp.lr,
        beta1: hp.beta1,
        beta2: hp.beta2,
        eps: hp.eps,
        step: hp.step,
    }
}

pub fn unscale_check(x: &Tensor, factor: f32, flag: &Tensor) -> Result<(), Error> {
    with([x, flag], |k, e, [x, f]| k.unscale_check(e, &x, factor, &f))
}

pub fn zero(x: &Tensor) -> Result<(), Error> {
    with([x], |k, e, [x]| {
        // The clear cannot join the step's open compute pass.
        k.end_pass();
        for part in x.parts {
            // Parts are 4-byte multiples except possibly a 2-byte tail (float16); the
            // block is 512-byte rounded, so clearing up to the next word stays inside it.
            e.clear_buffer(part.buffer, part.offset, Some(part.len.next_multiple_of(4)));
        }
        Ok(())
    })
}

pub fn copy(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    with([src, dst], |k, e, [s, d]| k.copy(e, &s, &d))
}

/// One fused pass: `dst` written once (not a copy of `grad`, then masked in place).
pub fn threshold_backward(grad: &Tensor, output: &Tensor, dst: &Tensor) -> Result<(), Error> {
    with([grad, output, dst], |k, e, [g, a, d]| {
        k.threshold_backward(e, &g, &a, &d)
    })
}

pub fn relu_(x: &Tensor) -> Result<(), Error> {
    with([x, x], |k, e, [s, d]| k.relu(e, &s, &d))
}

pub fn log_softmax(x: &Tensor, out: &Tensor) -> Result<(), Error> {
    with([x, out], |k, e, [x, o]| k.log_softmax(e, &x, &o))
}

pub fn nll_loss(
    logp: &Tensor,
    labels: &Tensor,
    loss: &Tensor,
    total_weight: &Tensor,
) -> Result<(), Error> {
    with([logp, labels, loss, total_weight], |k, e, [p, y, l, t]| {
        k.nll_loss(e, &p, &y, &l, &t)
    })
}

/// `log_softmax` then `nll_loss`, one kernel where they allow it
/// (`Kernels::log_softmax_nll_loss`).
pub fn log_softmax_nll_loss(
    x: &Tensor,
    logp: &Tensor,
    labels: &Tensor,
    loss: &Tensor,
    total_weight: &Tensor,
) -> Result<(), Error> {
    with(
        [x, logp, labels, loss, total_weight],
        |k, e, [x, p, y, l, t]| k.log_softmax_nll_loss(e, &x, &p, &y, &l, &t),
    )
}

/// `fill` then `nll_loss_backward`, one kernel where they allow it
/// (`Kernels::fill_nll_loss_backward`).
pub fn fill_nll_loss_backward(
    grad: &Tensor,
    value: f32,
    labels: &Tensor,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<(), Error> {
    with([grad, labels, total_weight, out], |k, e, [g, y, t, o]| {
        k.fill_nll_loss_backward(e, &g, value, &y, &t, &o)
    })
}

pub fn nll_loss_backward(
    grad: &Tensor,
    labels: &Tensor,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<(), Error> {
    with([grad, labels, total_weight, out], |k, e, [g, y, t, o]| {
        k.nll_loss_backward(e, &g, &y, &t, &o)
    })
}

pub fn log_softmax_backward(grad: &Tensor, logp: &Tensor, out: &Tensor) -> Result<(), Error> {
    with([grad, logp, out], |k, e, [g, p, o]| {
        k.log_softmax_backward(e, &g, &p, &o)
    })
}

pub fn fill(x: &Tensor, value: f32) -> Result<(), Error> {
    with([x], |k, e, [x]| k.fill(e, &x, f64::from(value)))
}

pub fn scale(x: &Tensor, factor: f32) -> Result<(), Error> {
    with([x], |k, e, [x]| k.scale(e, &x, factor))
}

pub fn add(dst: &Tensor, src: &Tensor) -> Result<(), Error> {
    with([dst, src], |k, e, [d, s]| k.add(e, &d, &s))
}

/// Adam's step and foreach Adam's denominator: one kernel where the tensors allow it
/// (`Kernels::adam_with_denom`).
#[allow(clippy::too_many_arguments)]
pub fn adam_with_denom(
    param: &Tensor,
    grad: &Tensor,
    m: &Tensor,
    v: &Tensor,
    hp: AdamStep,
    denom: &Tensor,
    scale: f32,
    eps: f32,
) -> Result<(), Error> {
    let h = adam_hyper(hp);
    with(
        [param, grad, m, v, denom],
        |k, e, [param, grad, m, v, denom]| {
            let t = gpumem_kernels::optim_fused::AdamTensors {
                param,
                grad,
                m,
                v,
                denom,
            };
            k.adam_with_denom(e, &t, &h, f64::from(scale), f64::from(eps))
        },
    )
}

pub fn adam_denom(v: &Tensor, dst: &Tensor, scale: f32, eps: f32) -> Result<(), Error> {
    with([v, dst], |k, e, [v, d]| {
        k.adam_denom(e, &v, &d, f64::from(scale), f64::from(eps))
    })
}
