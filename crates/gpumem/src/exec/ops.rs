//! The operations a training step needs, checked once here and then run by the backing:
//! plain Rust on `cpu`, WGSL kernels on `wgpu`, nothing at all on `plan`.
// The planner (no backing that executes) checks every operation and runs none: the values
// only the kernels read go unused there.
#![cfg_attr(not(any(feature = "cpu", feature = "wgpu")), allow(unused_variables))]

pub use super::spec::{AdamStep, Matmul};

#[cfg(feature = "cpu")]
use super::cpu;
#[cfg(feature = "wgpu")]
use super::gpu;
use crate::error::Error;
use crate::tensor::{DType, Tensor};

fn mismatch(msg: String) -> Error {
    Error::Shape(msg)
}

fn same_device(ts: &[&Tensor]) -> Result<(), Error> {
    let first = ts[0].device();
    if ts
        .iter()
        .any(|t| !std::rc::Rc::ptr_eq(&t.device().inner, &first.inner))
    {
        return Err(mismatch(
            "tensors of one operation must live on one device".into(),
        ));
    }
    Ok(())
}

/// Every tensor holds floating-point values (float16, float32 or float64).
fn float(ts: &[&Tensor]) -> Result<(), Error> {
    for t in ts {
        if matches!(t.dtype(), DType::U32 | DType::I64) {
            return Err(mismatch(format!(
                "{}: expected floating-point values, got {}",
                t.label(),
                t.dtype()
            )));
        }
    }
    Ok(())
}

/// The output shares no byte with any input (views of one storage may).
fn distinct(out: &Tensor, inputs: &[&Tensor]) -> Result<(), Error> {
    let overlaps =
        |t: &&Tensor| t.addr() < out.addr() + out.bytes() && out.addr() < t.addr() + t.bytes();
    if inputs.iter().any(overlaps) {
        return Err(mismatch(format!(
            "{}: output may not also be an input",
            out.label()
        )));
    }
    Ok(())
}

fn same_shape(a: &Tensor, b: &Tensor) -> Result<(), Error> {
    if (a.rows(), a.cols()) != (b.rows(), b.cols()) {
        return Err(mismatch(format!(
            "{} is {}×{} but {} is {}×{}",
            a.label(),
            a.rows(),
            a.cols(),
            b.label(),
            b.rows(),
            b.cols()
        )));
    }
    Ok(())
}

/// The backing of `t`'s device.
fn backend_of(t: &Tensor) -> crate::Backend {
    t.device().borrow().alloc.store().kind()
}

/// Evaluates the `cpu` or the `gpu` expression on the backing of `t`'s device, `plan` on
/// `plan`. A macro, not a function, so that the expression of a backing left out of the
/// build (its feature off) is dropped before its names are resolved.
macro_rules! on_backing {
    ($t:expr, $plan:expr, $cpu:expr, $gpu:expr $(,)?) => {
        match backend_of($t) {
            #[cfg(feature = "cpu")]
            crate::Backend::Cpu => $cpu,
            #[cfg(feature = "wgpu")]
            crate::Backend::Wgpu => $gpu,
            _ => $plan,
        }
    };
}

mod fused;
pub use fused::{
    adam_with_denom, fill_nll_loss_backward, log_softmax_nll_loss, matmul_colsum, matmul_relu,
    sgd_foreach,
};

/// Shape of `op(t)`.
fn op_shape(t: &Tensor, trans: bool) -> (u64, u64) {
    if trans {
        (t.cols(), t.rows())
    } else {
        (t.rows(), t.cols())
    }
}

/// `c = op(a)·op(b) (+ bias)`.
pub fn matmul(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
) -> Result<(), Error> {
    check_matmul(spec, a, b, c, bias)?;
    on_backing!(
        c,
        Ok(()),
        cpu::matmul(spec, a, b, c, bias),
        gpu::matmul(spec, a, b, c, bias),
    )
}

fn check_matmul(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
) -> Result<(), Error> {
    same_device(&[a, b, c])?;
    float(&[a, b, c])?;
    distinct(c, &[a, b])?;
    let (m, k) = op_shape(a, spec.trans_a);
    let (k2, n) = op_shape(b, spec.trans_b);
    if k != k2 || (c.rows(), c.cols()) != (m, n) {
        return Err(mismatch(format!(
            "matmul shapes: op({}) is {m}×{k}, op({}) is {k2}×{n}, {} is {}×{}",
            a.label(),
            b.label(),
            c.label(),
            c.rows(),
            c.cols()
        )));
    }
    if let Some(bias) = bias {
        float(&[bias])?;
        if bias.len() != n {
            return Err(mismatch(format!(
                "{}: bias of {} for {n} columns",
                bias.label(),
                bias.len()
            )));
        }
    }
    Ok(())
}

pub fn relu(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    check_relu(src, dst)?;
    on_backing!(dst, Ok(()), cpu::relu(src, dst), gpu::relu(src, dst))
}

fn check_relu(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[src, dst])?;
    float(&[src, dst])?;
    same_shape(src, dst)?;
    distinct(dst, &[src])
}

/// `dst` can hold the column sums of `src` (one value per column: a bias's gradient).
fn check_colsum(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[src, dst])?;
    float(&[src, dst])?;
    distinct(dst, &[src])?;
    if dst.len() != src.cols() {
        return Err(mismatch(format!(
            "{}: {} values for {} columns",
            dst.label(),
            dst.len(),
            src.cols()
        )));
    }
    Ok(())
}

/// `param -= lr · grad`.
pub fn sgd(param: &Tensor, grad: &Tensor, lr: f32) -> Result<(), Error> {
    same_device(&[param, grad])?;
    float(&[param, grad])?;
    same_shape(param, grad)?;
    distinct(param, &[grad])?;
    on_backing!(
        param,
        Ok(()),
        cpu::sgd(param, grad, lr),
        gpu::sgd(param, grad, lr),
    )
}

/// One Adam update with bias correction, as `torch.optim.Adam` does it.
pub fn adam(
    param: &Tensor,
    grad: &Tensor,
    m: &Tensor,
    v: &Tensor,
    hp: AdamStep,
) -> Result<(), Error> {
    check_adam(param, grad, m, v)?;
    on_backing!(
        param,
        Ok(()),
        cpu::adam(param, grad, m, v, hp),
        gpu::adam(param, grad, m, v, hp),
    )
}

fn check_adam(param: &Tensor, grad: &Tensor, m: &Tensor, v: &Tensor) -> Result<(), Error> {
    same_device(&[param, grad, m, v])?;
    float(&[param, grad, m, v])?;
    for t in [grad, m, v] {
        same_shape(param, t)?;
    }
    distinct(param, &[grad, m, v])?;
    distinct(m, &[grad, v])?;
    distinct(v, &[grad])
}

/// `x *= factor`, setting `flag` (a 1×1 tensor) to 1 if any result is infinite or NaN —
/// how mixed precision unscales its gradients and notices an overflow.
pub fn unscale_check(x: &Tensor, factor: f32, flag: &Tensor) -> Result<(), Error> {
    same_device(&[x, flag])?;
    float(&[x, flag])?;
    distinct(flag, &[x])?;
    if flag.len() != 1 {
        return Err(mismatch(format!("{}: a flag is one value", flag.label())));
    }
    on_backing!(
        x,
        Ok(()),
        cpu::unscale_check(x, factor, flag),
        gpu::unscale_check(x, factor, flag),
    )
}

/// Sets every value to zero.
pub fn zero(x: &Tensor) -> Result<(), Error> {
    on_backing!(x, Ok(()), cpu::zero(x), gpu::zero(x))
}

/// One value.
fn scalar(t: &Tensor) -> Result<(), Error> {
    if t.len() != 1 {
        return Err(mismatch(format!("{}: expected one value", t.label())));
    }
    Ok(())
}

/// `labels` holds one int64 class per row of `rows`.
fn labels_for(labels: &Tensor, rows: &Tensor) -> Result<(), Error> {
    if labels.dtype() != DType::I64 || labels.len() != rows.rows() {
        return Err(mismatch(format!(
            "{}: expected {} int64 labels",
            labels.label(),
            rows.rows()
        )));
    }
    Ok(())
}

/// `dst = src`, converted to `dst`'s type: PyTorch's `_to_copy` (autocast's casts) and
/// `clone`.
pub fn copy(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[src, dst])?;
    float(&[src, dst])?;
    same_shape(src, dst)?;
    distinct(dst, &[src])?;
    on_backing!(dst, Ok(()), cpu::copy(src, dst), gpu::copy(src, dst))
}

/// `dst = grad · (output > 0)`: the ReLU's backward pass (`threshold_backward`), into a new
/// tensor while the incoming gradient and the saved output are still alive.
pub fn threshold_backward(grad: &Tensor, output: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[grad, output, dst])?;
    float(&[grad, output, dst])?;
    same_shape(grad, output)?;
    same_shape(grad, dst)?;
    distinct(dst, &[grad, output])?;
    on_backing!(
        dst,
        Ok(()),
        cpu::threshold_backward(grad, output, dst),
        gpu::threshold_backward(grad, output, dst),
    )
}

/// `x = max(x, 0)` in place: `nn.ReLU(inplace=True)`.
pub fn relu_(x: &Tensor) -> Result<(), Error> {
    float(&[x])?;
    on_backing!(x, Ok(()), cpu::relu_(x), gpu::relu_(x))
}

fn check_log_softmax(x: &Tensor, out: &Tensor) -> Result<(), Error> {
    same_device(&[x, out])?;
    float(&[x, out])?;
    same_shape(x, out)?;
    distinct(out, &[x])
}

fn check_nll_loss(
    logp: &Tensor,
    labels: &Tensor,
    loss: &Tensor,
    total_weight: &Tensor,
) -> Result<(), Error> {
    same_device(&[logp, labels, loss, total_weight])?;
    float(&[logp, loss, total_weight])?;
    labels_for(labels, logp)?;
    scalar(loss)?;
    scalar(total_weight)?;
    distinct(loss, &[logp, labels, total_weight])?;
    distinct(total_weight, &[logp, labels])
}

/// Row-wise `log_softmax` of `x` into `out`.
pub fn log_softmax(x: &Tensor, out: &Tensor) -> Result<(), Error> {
    check_log_softmax(x, out)?;
    on_backing!(
        out,
        Ok(()),
        cpu::log_softmax(x, out),
        gpu::log_softmax(x, out),
    )
}

/// The mean negative log-likelihood of `labels` under `logp`: `loss` and `total_weight` (the
/// row count) are one value each, as `nll_loss_forward` makes them.
pub fn nll_loss(
    logp: &Tensor,
    labels: &Tensor,
    loss: &Tensor,
    total_weight: &Tensor,
) -> Result<(), Error> {
    check_nll_loss(logp, labels, loss, total_weight)?;
    on_backing!(
        loss,
        Ok(()),
        cpu::nll_loss(logp, labels, loss, total_weight),
        gpu::nll_loss(logp, labels, loss, total_weight),
    )
}

/// `out[r, y_r] = −grad / total_weight`, zero elsewhere: `nll_loss_backward`.
pub fn nll_loss_backward(
    grad: &Tensor,
    labels: &Tensor,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<(), Error> {
    check_nll_loss_backward(grad, labels, total_weight, out)?;
    on_backing!(
        out,
        Ok(()),
        cpu::nll_loss_backward(grad, labels, total_weight, out),
        gpu::nll_loss_backward(grad, labels, total_weight, out),
    )
}

fn check_nll_loss_backward(
    grad: &Tensor,
    labels: &Tensor,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<(), Error> {
    same_device(&[grad, labels, total_weight, out])?;
    float(&[grad, total_weight, out])?;
    labels_for(labels, out)?;
    scalar(grad)?;
    scalar(total_weight)?;
    distinct(out, &[grad, labels, total_weight])
}

/// `out = grad − exp(logp) · Σ_row grad`: `_log_softmax_backward_data`.
pub fn log_softmax_backward(grad: &Tensor, logp: &Tensor, out: &Tensor) -> Result<(), Error> {
    same_device(&[grad, logp, out])?;
    float(&[grad, logp, out])?;
    same_shape(grad, logp)?;
    same_shape(grad, out)?;
    distinct(out, &[grad, logp])?;
    on_backing!(
        out,
        Ok(()),
        cpu::log_softmax_backward(grad, logp, out),
        gpu::log_softmax_backward(grad, logp, out),
    )
}

/// Every value set to `value`: `ones_like`, `full`.
pub fn fill(x: &Tensor, value: f32) -> Result<(), Error> {
    float(&[x])?;
    on_backing!(x, Ok(()), cpu::fill(x, value), gpu::fill(x, value))
}

/// `x *= factor` in place: `mul_`.
pub fn scale(x: &Tensor, factor: f32) -> Result<(), Error> {
    float(&[x])?;
    on_backing!(x, Ok(()), cpu::scale(x, factor), gpu::scale(x, factor))
}

/// `dst += src` in place: `add_` (gradient accumulation, momentum).
pub fn add(dst: &Tensor, src: &Tensor) -> Result<(), Error> {
    same_device(&[dst, src])?;
    float(&[dst, src])?;
    same_shape(dst, src)?;
    distinct(dst, &[src])?;
    on_backing!(dst, Ok(()), cpu::add(dst, src), gpu::add(dst, src))
}

/// `dst = sqrt(v) · scale + eps`: Adam's denominator, the temporary that foreach and
/// for-loop Adam allocate (`scale` is 1/√(1 − β₂ᵗ)).
pub fn adam_denom(v: &Tensor, dst: &Tensor, scale: f32, eps: f32) -> Result<(), Error> {
    check_adam_denom(v, dst)?;
    on_backing!(
        dst,
        Ok(()),
        cpu::adam_denom(v, dst, scale, eps),
        gpu::adam_denom(v, dst, scale, eps),
    )
}

fn check_adam_denom(v: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[v, dst])?;
    float(&[v, dst])?;
    same_shape(v, dst)?;
    distinct(dst, &[v])
}
