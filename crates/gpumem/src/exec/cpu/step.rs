//! The operations PyTorch's training step adds to the matrix products: casts and copies,
//! the ReLU's backward into a new tensor, log-softmax and the negative log-likelihood with
//! their backward passes, scalars, and the pieces of the optimizers.

use super::super::compute::Compute;
use super::HostView;
use super::{dispatch, load, par, raw, with_mut};
use crate::error::Error;

/// The labels of an int64 label tensor, checked to be classes below `classes`.
fn labels(t: &HostView, classes: usize) -> Result<Vec<usize>, Error> {
    raw::<i64>(t)?
        .iter()
        .enumerate()
        .map(|(row, &l)| {
            usize::try_from(l)
                .ok()
                .filter(|&l| l < classes)
                .ok_or_else(|| {
                    Error::Shape(format!("label {l} of row {row} is not below {classes}"))
                })
        })
        .collect()
}

/// `dst = src`, converted to `dst`'s type (PyTorch's `_to_copy` and `clone`).
pub fn copy(src: &HostView, dst: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(src: &HostView, dst: &HostView) -> Result<(), Error> {
        let s = load::<C>(src)?;
        with_mut::<C, _>(dst, |d| {
            par::elementwise(d, |at, d| d.copy_from_slice(&s[at..at + d.len()]))
        })
    }
    dispatch!(run, [src, dst], src, dst)
}

/// `dst = grad · (output > 0)`: `threshold_backward`, into a new tensor.
pub fn threshold_backward(grad: &HostView, output: &HostView, dst: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(grad: &HostView, output: &HostView, dst: &HostView) -> Result<(), Error> {
        let (g, a) = (load::<C>(grad)?, load::<C>(output)?);
        with_mut::<C, _>(dst, |d| {
            par::elementwise(d, |at, d| {
                for ((d, &g), &a) in d.iter_mut().zip(&g[at..]).zip(&a[at..]) {
                    *d = if a > C::zero() { g } else { C::zero() };
                }
            })
        })
    }
    dispatch!(run, [grad, output, dst], grad, output, dst)
}

/// `x = max(x, 0)` in place (`relu_`).
pub fn relu_(x: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(x: &HostView) -> Result<(), Error> {
        with_mut::<C, _>(x, |v| {
            par::elementwise(v, |_, v| v.iter_mut().for_each(|v| *v = v.max(C::zero())))
        })
    }
    dispatch!(run, [x], x)
}

/// Row-wise `log_softmax`, stable (the row's maximum is subtracted first).
pub fn log_softmax(x: &HostView, out: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(x: &HostView, out: &HostView) -> Result<(), Error> {
        let c = x.cols() as usize;
        let v = load::<C>(x)?;
        with_mut::<C, _>(out, |o| {
            for (row, orow) in v.chunks_exact(c).zip(o.chunks_exact_mut(c)) {
                let max = row.iter().copied().fold(C::neg_infinity(), C::max);
                let sum = row.iter().fold(C::zero(), |s, &v| s + (v - max).exp());
                let log_sum = sum.ln() + max;
                orow.iter_mut()
                    .zip(row)
                    .for_each(|(o, &v)| *o = v - log_sum);
            }
        })
    }
    dispatch!(run, [x, out], x, out)
}

/// Mean negative log-likelihood: `loss = −Σ logp[r, y_r] / B`, `total_weight = B`.
pub fn nll_loss(
    logp: &HostView,
    labels_t: &HostView,
    loss: &HostView,
    total_weight: &HostView,
) -> Result<(), Error> {
    fn run<C: Compute>(
        logp: &HostView,
        labels_t: &HostView,
        loss: &HostView,
        total_weight: &HostView,
    ) -> Result<(), Error> {
        let c = logp.cols() as usize;
        let y = labels(labels_t, c)?;
        let v = load::<C>(logp)?;
        // Summed in f64, so that a million rows do not drift.
        let sum: f64 = v
            .chunks_exact(c)
            .zip(&y)
            .map(|(row, &l)| row[l].to_f64().unwrap_or(f64::NAN))
            .sum();
        let n = y.len() as f64;
        with_mut::<C, _>(loss, |l| l[0] = C::from(-sum / n).unwrap_or(C::nan()))?;
        with_mut::<C, _>(total_weight, |t| t[0] = C::from(n).unwrap_or(C::nan()))
    }
    dispatch!(
        run,
        [logp, loss, total_weight],
        logp,
        labels_t,
        loss,
        total_weight
    )
}

/// `out[r, j] = −grad / total_weight` where `j` is row `r`'s label, else 0.
pub fn nll_loss_backward(
    grad: &HostView,
    labels_t: &HostView,
    total_weight: &HostView,
    out: &HostView,
) -> Result<(), Error> {
    fn run<C: Compute>(
        grad: &HostView,
        labels_t: &HostView,
        total_weight: &HostView,
        out: &HostView,
    ) -> Result<(), Error> {
        let c = out.cols() as usize;
        let y = labels(labels_t, c)?;
        let value = -load::<C>(grad)?[0] / load::<C>(total_weight)?[0];
        with_mut::<C, _>(out, |o| {
            for (row, &l) in o.chunks_exact_mut(c).zip(&y) {
                row.iter_mut().for_each(|v| *v = C::zero());
                row[l] = value;
            }
        })
    }
    dispatch!(
        run,
        [grad, total_weight, out],
        grad,
        labels_t,
        total_weight,
        out
    )
}

/// `out = grad − exp(logp) · Σ_row grad`: the backward pass of `log_softmax`.
pub fn log_softmax_backward(grad: &HostView, logp: &HostView, out: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(grad: &HostView, logp: &HostView, out: &HostView) -> Result<(), Error> {
        let c = out.cols() as usize;
        let (g, p) = (load::<C>(grad)?, load::<C>(logp)?);
        with_mut::<C, _>(out, |o| {
            for ((orow, grow), prow) in o
                .chunks_exact_mut(c)
                .zip(g.chunks_exact(c))
                .zip(p.chunks_exact(c))
            {
                let sum = grow.iter().fold(C::zero(), |s, &v| s + v);
                for ((o, &g), &p) in orow.iter_mut().zip(grow).zip(prow) {
                    *o = g - p.exp() * sum;
                }
            }
        })
    }
    dispatch!(run, [grad, logp, out], grad, logp, out)
}

/// Every value set to `value` (`ones_like`, `full`).
pub fn fill(x: &HostView, value: f32) -> Result<(), Error> {
    fn run<C: Compute>(x: &HostView, value: f32) -> Result<(), Error> {
        with_mut::<C, _>(x, |v| {
            par::elementwise(v, |_, v| v.fill(C::from_f32(value)))
        })
    }
    dispatch!(run, [x], x, value)
}

/// `x *= factor` in place (`mul_`).
pub fn scale(x: &HostView, factor: f32) -> Result<(), Error> {
    fn run<C: Compute>(x: &HostView, factor: f32) -> Result<(), Error> {
        let f = C::from_f32(factor);
        with_mut::<C, _>(x, |v| {
            par::elementwise(v, |_, v| v.iter_mut().for_each(|v| *v *= f))
        })
    }
    dispatch!(run, [x], x, factor)
}

/// `dst += src` in place (`add_`: gradient accumulation, momentum).
pub fn add(dst: &HostView, src: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(dst: &HostView, src: &HostView) -> Result<(), Error> {
        let s = load::<C>(src)?;
        with_mut::<C, _>(dst, |d| {
            par::elementwise(d, |at, d| {
                d.iter_mut().zip(&s[at..]).for_each(|(d, &s)| *d += s)
            })
        })
    }
    dispatch!(run, [dst, src], dst, src)
}

/// `dst = sqrt(v) · scale + eps`: Adam's denominator, as `_foreach_sqrt` and the ops after
/// it leave it.
pub fn adam_denom(v: &HostView, dst: &HostView, scale: f32, eps: f32) -> Result<(), Error> {
    fn run<C: Compute>(v: &HostView, dst: &HostView, scale: f32, eps: f32) -> Result<(), Error> {
        let (s, e) = (C::from_f32(scale), C::from_f32(eps));
        let src = load::<C>(v)?;
        with_mut::<C, _>(dst, |d| {
            par::elementwise(d, |at, d| {
                d.iter_mut()
                    .zip(&src[at..])
                    .for_each(|(d, &v)| *d = v.sqrt() * s + e)
            })
        })
    }
    dispatch!(run, [v, dst], v, dst, scale, eps)
}
