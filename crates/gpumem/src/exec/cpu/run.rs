//! The one `match` that runs each operation in plain Rust.

use super::super::Memory;
use super::super::op::{Op, Operand};
use super::*;

/// Runs `op` on host memory, now.
pub(crate) fn run(mem: &Memory, op: &Op) -> Result<(), Error> {
    let store = host(mem)?;
    let v = |t: &Operand| HostView::resolve(mem, store, t);
    use Op::*;
    match op {
        Matmul {
            spec,
            a,
            b,
            c,
            bias,
        } => {
            let bias = bias.as_ref().map(v).transpose()?;
            matmul(*spec, &v(a)?, &v(b)?, &v(c)?, bias.as_ref())
        }
        Relu { src, dst } => relu(&v(src)?, &v(dst)?),
        ReluInPlace { x } => relu_(&v(x)?),
        Colsum { src, dst } => colsum(&v(src)?, &v(dst)?),
        Sgd { param, grad, lr } => sgd(&v(param)?, &v(grad)?, *lr),
        SgdForeach { pairs, lr } => pairs.iter().try_for_each(|(p, g)| sgd(&v(p)?, &v(g)?, *lr)),
        Adam {
            param,
            grad,
            m,
            v: sq,
            hp,
        } => adam(&v(param)?, &v(grad)?, &v(m)?, &v(sq)?, *hp),
        AdamDenom {
            v: sq,
            dst,
            scale,
            eps,
        } => adam_denom(&v(sq)?, &v(dst)?, *scale, *eps),
        UnscaleCheck { x, factor, flag } => unscale_check(&v(x)?, *factor, &v(flag)?),
        Zero { x } => zero(&v(x)?),
        Copy { src, dst } => copy(&v(src)?, &v(dst)?),
        ThresholdBackward { grad, output, dst } => {
            threshold_backward(&v(grad)?, &v(output)?, &v(dst)?)
        }
        LogSoftmax { x, out } => log_softmax(&v(x)?, &v(out)?),
        NllLoss {
            logp,
            labels,
            loss,
            total_weight,
        } => nll_loss(&v(logp)?, &v(labels)?, &v(loss)?, &v(total_weight)?),
        NllLossBackward {
            grad,
            labels,
            total_weight,
            out,
        } => nll_loss_backward(&v(grad)?, &v(labels)?, &v(total_weight)?, &v(out)?),
        LogSoftmaxBackward { grad, logp, out } => {
            log_softmax_backward(&v(grad)?, &v(logp)?, &v(out)?)
        }
        Fill { x, value } => fill(&v(x)?, *value),
        Scale { x, factor } => scale(&v(x)?, *factor),
        Add { dst, src } => add(&v(dst)?, &v(src)?),
        // The joined operations, as their two parts (the cpu backing has no fused kernels,
        // and its executor never joins any; these keep the match whole).
        MatmulRelu { product, out } => {
            run(mem, product)?;
            let [.., c] = product_operands(product)?;
            relu(&v(c)?, &v(out)?)
        }
        MatmulColsum { product, sums } => {
            run(mem, product)?;
            let [_, b, _] = product_operands(product)?;
            colsum(&v(b)?, &v(sums)?)
        }
        LogSoftmaxNllLoss { x, loss } => {
            let NllLoss { logp, .. } = &**loss else {
                return Err(not_a_pair());
            };
            log_softmax(&v(x)?, &v(logp)?)?;
            run(mem, loss)
        }
        FillNllLossBackward { value, backward } => {
            let NllLossBackward { grad, .. } = &**backward else {
                return Err(not_a_pair());
            };
            fill(&v(grad)?, *value)?;
            run(mem, backward)
        }
        AdamWithDenom { step, denom } => {
            run(mem, step)?;
            run(mem, denom)
        }
    }
}

/// A product's `a`, `b` and `c`.
fn product_operands(op: &Op) -> Result<[&Operand; 3], Error> {
    match op {
        Op::Matmul { a, b, c, .. } => Ok([a, b, c]),
        _ => Err(not_a_pair()),
    }
}

/// A joined operation whose parts are not the pair `fusion` makes: a bug, reported as one.
fn not_a_pair() -> Error {
    Error::Device("a fused operation of the wrong parts".into())
}
