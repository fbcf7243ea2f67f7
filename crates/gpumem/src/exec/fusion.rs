//! Which two operations in a row the `wgpu` backing runs as one kernel: the step issues
//! PyTorch's operations one by one, and the executor, holding the first of a pair back,
//! joins it with the next where its kernels have the pair. Each joined operation writes
//! every output exactly as its two parts would, and ops allocate nothing, so the
//! allocator's trace is the same either way.

use super::op::{Op, Operand};

/// Whether `op` can start a pair: the executor then holds it until the next one arrives.
pub(crate) fn may_lead(op: &Op) -> bool {
    matches!(
        op,
        Op::Matmul { .. } | Op::LogSoftmax { .. } | Op::Fill { .. } | Op::Adam { .. }
    )
}

/// Two operations in a row: joined into one, or left apart.
// Returned and matched at once, never stored: its size costs a move, not memory.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Joined {
    One(Op),
    Apart(Op, Op),
}

/// `first` then `next` as one operation, or both unchanged when no kernel runs the pair.
pub(crate) fn fuse(first: Op, next: Op) -> Joined {
    Joined::One(match (&first, &next) {
        // A linear layer and its ReLU: `addmm` then `relu` of its output.
        (Op::Matmul { c, .. }, Op::Relu { src, dst })
            if c.is(src) && apart(dst, first.operands()) =>
        {
            let out = dst.clone();
            Op::MatmulRelu {
                product: Box::new(first),
                out,
            }
        }
        // A weight's gradient `aᵀ·dZ` and its bias's `Σ dZ`.
        (Op::Matmul { b, bias: None, .. }, Op::Colsum { src, dst })
            if b.is(src) && apart(dst, first.operands()) =>
        {
            let sums = dst.clone();
            Op::MatmulColsum {
                product: Box::new(first),
                sums,
            }
        }
        // `F.cross_entropy`'s two forward operations.
        (
            Op::LogSoftmax { x, out },
            Op::NllLoss {
                logp,
                loss,
                total_weight,
                ..
            },
        ) if out.is(logp) && apart(loss, vec![x]) && apart(total_weight, vec![x]) => {
            let x = x.clone();
            Op::LogSoftmaxNllLoss {
                x,
                loss: Box::new(next),
            }
        }
        // The seed of ones and the loss's backward.
        (Op::Fill { x, value }, Op::NllLossBackward { grad, .. }) if x.is(grad) => {
            let value = *value;
            Op::FillNllLossBackward {
                value,
                backward: Box::new(next),
            }
        }
        // Adam's step and the denominator of its updated `v`.
        (
            Op::Adam {
                param, grad, m, v, ..
            },
            Op::AdamDenom { v: from, dst, .. },
        ) if v.is(from) && apart(dst, vec![param, grad, m]) => Op::AdamWithDenom {
            step: Box::new(first),
            denom: Box::new(next),
        },
        _ => return Joined::Apart(first, next),
    })
}

/// `out` lies in none of `others`' blocks, so one kernel may write it while reading them.
fn apart(out: &Operand, others: Vec<&Operand>) -> bool {
    others.iter().all(|o| o.block != out.block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::BlockAddr;
    use crate::dtype::DType;
    use crate::exec::op::Matmul;

    fn operand(block: u64) -> Operand {
        Operand {
            block: BlockAddr(block),
            offset: 0,
            rows: 2,
            cols: 2,
            dtype: DType::F32,
            label: format!("t{block}").into(),
        }
    }

    fn product(c: u64) -> Op {
        Op::Matmul {
            spec: Matmul::default(),
            a: operand(1),
            b: operand(2),
            c: operand(c),
            bias: None,
        }
    }

    #[test]
    fn a_product_and_the_relu_of_its_output_are_one_kernel() {
        let relu = Op::Relu {
            src: operand(3),
            dst: operand(4),
        };
        assert!(matches!(
            fuse(product(3), relu),
            Joined::One(Op::MatmulRelu { .. })
        ));
    }

    #[test]
    fn a_relu_of_another_tensor_or_into_an_input_stays_apart() {
        let other = Op::Relu {
            src: operand(5),
            dst: operand(4),
        };
        assert!(matches!(fuse(product(3), other), Joined::Apart(..)));
        let into_input = Op::Relu {
            src: operand(3),
            dst: operand(1),
        };
        assert!(matches!(fuse(product(3), into_input), Joined::Apart(..)));
    }

    #[test]
    fn adam_joins_only_the_denominator_of_its_own_v() {
        let adam = Op::Adam {
            param: operand(1),
            grad: operand(2),
            m: operand(3),
            v: operand(4),
            hp: crate::exec::op::AdamStep {
                lr: 0.1,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                step: 1,
            },
        };
        let denom = |v| Op::AdamDenom {
            v: operand(v),
            dst: operand(9),
            scale: 1.0,
            eps: 0.0,
        };
        assert!(matches!(
            fuse(adam.clone(), denom(4)),
            Joined::One(Op::AdamWithDenom { .. })
        ));
        assert!(matches!(fuse(adam, denom(3)), Joined::Apart(..)));
    }
}
