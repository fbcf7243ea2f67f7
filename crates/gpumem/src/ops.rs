//! The operations a training step needs, in PyTorch's order and nothing else: each checks
//! its tensors here and hands an [`Op`] to the device's executor, which runs it on the
//! backing (plain Rust on `cpu`, WGSL kernels on `wgpu`, nothing at all on `plan`) and
//! decides on its own which two in a row one kernel can run.

pub use crate::exec::op::{AdamStep, Matmul};

use crate::error::Error;
use crate::exec::op::{Op, Operand};
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

/// Hands the operation `op` makes to the executor of `t`'s device (on `plan`, which runs
/// nothing, the operation is not even made).
fn submit(t: &Tensor, op: impl FnOnce() -> Op) -> Result<(), Error> {
    t.device().execute(op)
}

/// What the executor needs of `t` ([`Tensor::operand`]).
fn o(t: &Tensor) -> Operand {
    t.operand()
}

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
    submit(c, || Op::Matmul {
        spec,
        a: o(a),
        b: o(b),
        c: o(c),
        bias: bias.map(o),
    })
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
    submit(dst, || Op::Relu {
        src: o(src),
        dst: o(dst),
    })
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

/// `dst[j] = Σ_i src[i, j]`: a bias's gradient, the sum of its output's gradient over the
/// batch (`sum(0)`).
pub fn colsum(src: &Tensor, dst: &Tensor) -> Result<(), Error> {
    check_colsum(src, dst)?;
    submit(dst, || Op::Colsum {
        src: o(src),
        dst: o(dst),
    })
}

/// [`sgd`] for every `(param, grad)` pair: foreach SGD without momentum
/// (`_foreach_add_(params, grads, alpha=-lr)`).
pub fn sgd_foreach(pairs: &[(&Tensor, &Tensor)], lr: f32) -> Result<(), Error> {
    let Some(&(first, _)) = pairs.first() else {
        return Ok(());
    };
    for &(param, grad) in pairs {
        same_device(&[first, param, grad])?;
        float(&[param, grad])?;
        same_shape(param, grad)?;
        distinct(param, &[grad])?;
    }
    submit(first, || Op::SgdForeach {
        pairs: pairs.iter().map(|&(p, g)| (o(p), o(g))).collect(),
        lr,
    })
}

/// `param -= lr · grad`.
pub fn sgd(param: &Tensor, grad: &Tensor, lr: f32) -> Result<(), Error> {
    same_device(&[param, grad])?;
    float(&[param, grad])?;
    same_shape(param, grad)?;
    distinct(param, &[grad])?;
    submit(param, || Op::Sgd {
        param: o(param),
        grad: o(grad),
        lr,
    })
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
    submit(param, || Op::Adam {
        param: o(param),
        grad: o(grad),
        m: o(m),
        v: o(v),
        hp,
    })
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
    submit(x, || Op::UnscaleCheck {
        x: o(x),
        factor,
        flag: o(flag),
    })
}

/// Sets every value to zero.
pub fn zero(x: &Tensor) -> Result<(), Error> {
    submit(x, || Op::Zero { x: o(x) })
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
    submit(dst, || Op::Copy {
        src: o(src),
        dst: o(dst),
    })
}

/// `dst = grad · (output > 0)`: the ReLU's backward pass (`threshold_backward`), into a new
/// tensor while the incoming gradient and the saved output are still alive.
pub fn threshold_backward(grad: &Tensor, output: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[grad, output, dst])?;
    float(&[grad, output, dst])?;
    same_shape(grad, output)?;
    same_shape(grad, dst)?;
    distinct(dst, &[grad, output])?;
    submit(dst, || Op::ThresholdBackward {
        grad: o(grad),
        output: o(output),
        dst: o(dst),
    })
}

/// `x = max(x, 0)` in place: `nn.ReLU(inplace=True)`.
pub fn relu_(x: &Tensor) -> Result<(), Error> {
    float(&[x])?;
    submit(x, || Op::ReluInPlace { x: o(x) })
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
    submit(out, || Op::LogSoftmax {
        x: o(x),
        out: o(out),
    })
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
    submit(loss, || Op::NllLoss {
        logp: o(logp),
        labels: o(labels),
        loss: o(loss),
        total_weight: o(total_weight),
    })
}

/// `out[r, y_r] = −grad / total_weight`, zero elsewhere: `nll_loss_backward`.
pub fn nll_loss_backward(
    grad: &Tensor,
    labels: &Tensor,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<(), Error> {
    check_nll_loss_backward(grad, labels, total_weight, out)?;
    submit(out, || Op::NllLossBackward {
        grad: o(grad),
        labels: o(labels),
        total_weight: o(total_weight),
        out: o(out),
    })
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
    submit(out, || Op::LogSoftmaxBackward {
        grad: o(grad),
        logp: o(logp),
        out: o(out),
    })
}

/// Every value set to `value`: `ones_like`, `full`.
pub fn fill(x: &Tensor, value: f32) -> Result<(), Error> {
    float(&[x])?;
    submit(x, || Op::Fill { x: o(x), value })
}

/// `x *= factor` in place: `mul_`.
pub fn scale(x: &Tensor, factor: f32) -> Result<(), Error> {
    float(&[x])?;
    submit(x, || Op::Scale { x: o(x), factor })
}

/// `dst += src` in place: `add_` (gradient accumulation, momentum).
pub fn add(dst: &Tensor, src: &Tensor) -> Result<(), Error> {
    same_device(&[dst, src])?;
    float(&[dst, src])?;
    same_shape(dst, src)?;
    distinct(dst, &[src])?;
    submit(dst, || Op::Add {
        dst: o(dst),
        src: o(src),
    })
}

/// `dst = sqrt(v) · scale + eps`: Adam's denominator, the temporary that foreach and
/// for-loop Adam allocate (`scale` is 1/√(1 − β₂ᵗ)).
pub fn adam_denom(v: &Tensor, dst: &Tensor, scale: f32, eps: f32) -> Result<(), Error> {
    check_adam_denom(v, dst)?;
    submit(dst, || Op::AdamDenom {
        v: o(v),
        dst: o(dst),
        scale,
        eps,
    })
}

fn check_adam_denom(v: &Tensor, dst: &Tensor) -> Result<(), Error> {
    same_device(&[v, dst])?;
    float(&[v, dst])?;
    same_shape(v, dst)?;
    distinct(dst, &[v])
}
