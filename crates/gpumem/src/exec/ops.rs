//! The operations a training step needs, checked once here and then run by the backing:
//! plain Rust on `cpu`, WGSL kernels on `wgpu`, nothing at all on `plan`.

pub use super::spec::{AdamStep, Matmul};

use super::{cpu, gpu};
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
        if t.dtype() == DType::U32 {
            return Err(mismatch(format!(
                "{}: expected floating-point values, got {}",
                t.label(),
                t.dtype()
            )));
        }
    }
    Ok(())
}

fn distinct(out: &Tensor, inputs: &[&Tensor]) -> Result<(), Error> {
    if inputs.iter().any(|t| t.addr() == out.addr()) {
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

/// Runs `f` on the backing of `t`'s device.
fn on_backing<R>(t: &Tensor, plan: R, cpu: impl FnOnce() -> R, gpu: impl FnOnce() -> R) -> R {
    let kind = t.device().borrow().alloc.store().kind();
    match kind {
        crate::Backend::Cpu => cpu(),
        crate::Backend::Wgpu => gpu(),
        _ => plan,
    }
}

/// Shape of `op(t)`.
fn op_shape(t: &Tensor, trans: bool) -> (u64, u64) {
    if trans {
        (t.cols(), t.rows())
    } else {
        (t.rows(), t.cols())
    }
}

pub fn matmul(
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
    on_backing(
        c,
        Ok(()),
        || cpu::matmul(spec, a, b, c, bias),
        || gpu::matmul(spec, a, b, c, bias),
    )
}

pub fn relu(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[src, dst])?;
    float(&[src, dst])?;
    same_shape(src, dst)?;
    distinct(dst, &[src])?;
    on_backing(dst, Ok(()), || cpu::relu(src, dst), || gpu::relu(src, dst))
}

/// `grad *= (activation > 0)`, in place: the gradient through a ReLU.
pub fn relu_backward(grad: &Tensor, activation: &Tensor) -> Result<(), Error> {
    same_device(&[grad, activation])?;
    float(&[grad, activation])?;
    same_shape(grad, activation)?;
    distinct(grad, &[activation])?;
    on_backing(
        grad,
        Ok(()),
        || cpu::relu_backward(grad, activation),
        || gpu::relu_backward(grad, activation),
    )
}

/// Softmax cross-entropy of `logits` against `labels`: per-row `(loss, correct)` into
/// `stats` and `(softmax − onehot) · scale` into `dlogits`.
pub fn softmax_xent(
    logits: &Tensor,
    labels: &Tensor,
    stats: &Tensor,
    dlogits: &Tensor,
    scale: f32,
) -> Result<(), Error> {
    same_device(&[logits, labels, stats, dlogits])?;
    float(&[logits, stats, dlogits])?;
    if labels.dtype() != DType::U32 || labels.len() != logits.rows() {
        return Err(mismatch(format!(
            "{}: expected {} uint32 labels",
            labels.label(),
            logits.rows()
        )));
    }
    if (stats.rows(), stats.cols()) != (logits.rows(), 2) {
        return Err(mismatch(format!(
            "{}: expected {}×2",
            stats.label(),
            logits.rows()
        )));
    }
    same_shape(logits, dlogits)?;
    distinct(dlogits, &[logits, labels, stats])?;
    distinct(stats, &[logits, labels])?;
    on_backing(
        logits,
        Ok(()),
        || cpu::softmax_xent(logits, labels, stats, dlogits, scale),
        || gpu::softmax_xent(logits, labels, stats, dlogits, scale),
    )
}

/// Column sums of `src` into `dst` (one value per column), or added to `dst`.
pub fn colsum(src: &Tensor, dst: &Tensor, accumulate: bool) -> Result<(), Error> {
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
    on_backing(
        src,
        Ok(()),
        || cpu::colsum(src, dst, accumulate),
        || gpu::colsum(src, dst, accumulate),
    )
}

/// `param -= lr · grad`.
pub fn sgd(param: &Tensor, grad: &Tensor, lr: f32) -> Result<(), Error> {
    same_device(&[param, grad])?;
    float(&[param, grad])?;
    same_shape(param, grad)?;
    distinct(param, &[grad])?;
    on_backing(
        param,
        Ok(()),
        || cpu::sgd(param, grad, lr),
        || gpu::sgd(param, grad, lr),
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
    same_device(&[param, grad, m, v])?;
    float(&[param, grad, m, v])?;
    for t in [grad, m, v] {
        same_shape(param, t)?;
    }
    distinct(param, &[grad, m, v])?;
    distinct(m, &[grad, v])?;
    distinct(v, &[grad])?;
    on_backing(
        param,
        Ok(()),
        || cpu::adam(param, grad, m, v, hp),
        || gpu::adam(param, grad, m, v, hp),
    )
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
    on_backing(
        x,
        Ok(()),
        || cpu::unscale_check(x, factor, flag),
        || gpu::unscale_check(x, factor, flag),
    )
}

/// Sets every value to zero.
pub fn zero(x: &Tensor) -> Result<(), Error> {
    on_backing(x, Ok(()), || cpu::zero(x), || gpu::zero(x))
}
