//! Operations that the wgpu backing runs as one kernel where the tensors allow it, each
//! equal to a sequence of the plain operations (which the cpu backing runs): every output
//! is written as that sequence writes it, and the callers allocate the outputs in the
//! sequence's order, so the allocator's trace does not change.

use super::{
    AdamStep, Matmul, backend_of, check_adam, check_adam_denom, check_colsum, check_log_softmax,
    check_matmul, check_nll_loss, check_nll_loss_backward, check_relu, distinct, float,
    same_device, same_shape,
};
use crate::error::Error;
#[cfg(feature = "cpu")]
use crate::exec::cpu;
#[cfg(feature = "wgpu")]
use crate::exec::gpu;
use crate::tensor::Tensor;

/// [`matmul`] then [`relu`]`(c, out)`: a linear layer and its ReLU, both outputs written as
/// the two operations write them (the wgpu backing fuses them into one kernel where it can).
pub fn matmul_relu(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    bias: Option<&Tensor>,
    out: &Tensor,
) -> Result<(), Error> {
    check_matmul(spec, a, b, c, bias)?;
    check_relu(c, out)?;
    distinct(out, &[a, b])?;
    if let Some(bias) = bias {
        distinct(out, &[bias])?;
    }
    on_backing!(
        c,
        Ok(()),
        cpu::matmul(spec, a, b, c, bias).and_then(|()| cpu::relu(c, out)),
        gpu::matmul_relu(spec, a, b, c, bias, out),
    )
}

/// [`matmul`] then the column sums of `b` into `sums`: a weight's gradient `aᵀ·dZ` and its bias's `Σ dZ`,
/// both written as the two operations write them (fused on the wgpu backing where it can).
pub fn matmul_colsum(
    spec: Matmul,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    sums: &Tensor,
) -> Result<(), Error> {
    check_matmul(spec, a, b, c, None)?;
    check_colsum(b, sums)?;
    distinct(sums, &[a, c])?;
    on_backing!(
        c,
        Ok(()),
        cpu::matmul(spec, a, b, c, None).and_then(|()| cpu::colsum(b, sums)),
        gpu::matmul_colsum(spec, a, b, c, sums),
    )
}

/// [`log_softmax`]`(x, logp)` then [`nll_loss`]`(logp, labels, loss, total_weight)`:
/// `F.cross_entropy`'s two forward operations, every output written as the two write it
/// (one kernel on the wgpu backing where the tensors allow it).
pub fn log_softmax_nll_loss(
    x: &Tensor,
    logp: &Tensor,
    labels: &Tensor,
    loss: &Tensor,
    total_weight: &Tensor,
) -> Result<(), Error> {
    check_log_softmax(x, logp)?;
    check_nll_loss(logp, labels, loss, total_weight)?;
    same_device(&[x, loss])?;
    distinct(loss, &[x])?;
    distinct(total_weight, &[x])?;
    on_backing!(
        loss,
        Ok(()),
        cpu::log_softmax(x, logp).and_then(|()| cpu::nll_loss(logp, labels, loss, total_weight)),
        gpu::log_softmax_nll_loss(x, logp, labels, loss, total_weight),
    )
}

/// [`fill`]`(grad, value)` then [`nll_loss_backward`]`(grad, labels, total_weight, out)`:
/// `torch.ones_like(loss)` (with `value` 1) and the loss's backward, both written as the two
/// write them (one kernel on the wgpu backing where the tensors allow it).
pub fn fill_nll_loss_backward(
    grad: &Tensor,
    value: f32,
    labels: &Tensor,
    total_weight: &Tensor,
    out: &Tensor,
) -> Result<(), Error> {
    check_nll_loss_backward(grad, labels, total_weight, out)?;
    on_backing!(
        out,
        Ok(()),
        cpu::fill(grad, value).and_then(|()| cpu::nll_loss_backward(
            grad,
            labels,
            total_weight,
            out
        )),
        gpu::fill_nll_loss_backward(grad, value, labels, total_weight, out),
    )
}

/// [`sgd`] for every `(param, grad)` pair: PyTorch's foreach SGD without momentum, one
/// kernel for several parameters on the wgpu backing where they allow it.
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
    on_backing!(
        first,
        Ok(()),
        pairs.iter().try_for_each(|&(p, g)| cpu::sgd(p, g, lr)),
        gpu::sgd_foreach(pairs, lr),
    )
}

/// [`adam`], then [`adam_denom`]`(v, denom, scale, eps)` from the updated `v`: foreach Adam's
/// step and its denominator, both written as the two operations write them (one kernel on
/// the wgpu backing where the tensors allow it).
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
    check_adam(param, grad, m, v)?;
    check_adam_denom(v, denom)?;
    distinct(denom, &[param, grad, m])?;
    on_backing!(
        param,
        Ok(()),
        cpu::adam(param, grad, m, v, hp).and_then(|()| cpu::adam_denom(v, denom, scale, eps)),
        gpu::adam_with_denom(param, grad, m, v, hp, denom, scale, eps),
    )
}
