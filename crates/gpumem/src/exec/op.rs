//! Every operation of a training step, declared once: what it reads, what it writes and its
//! settings. The `ops` module checks the tensors and builds one; the executor runs it on its
//! backing (`cpu.rs` and `gpu.rs` each have one `match` over these), and may run two in a
//! row as one kernel (the `fusion` module).
// The planner (no backing that runs) checks operations and never reads one.
#![cfg_attr(not(any(feature = "cpu", feature = "wgpu")), allow(dead_code))]

pub use super::spec::{AdamStep, Matmul};
use crate::alloc::BlockAddr;
use crate::dtype::DType;

/// A tensor as an operation sees it: which block, which bytes of it, what they hold. Not
/// the tensor itself, so an operation the executor holds back keeps no memory allocated.
#[derive(Debug, Clone)]
pub(crate) struct Operand {
    pub block: BlockAddr,
    /// Bytes from the start of the block (a view's first row).
    pub offset: u64,
    pub rows: u64,
    pub cols: u64,
    pub dtype: DType,
    pub label: std::rc::Rc<str>,
}

impl Operand {
    pub fn len(&self) -> u64 {
        self.rows * self.cols
    }

    pub fn bytes(&self) -> u64 {
        self.len() * self.dtype.size()
    }

    /// The same values: one view of one block.
    pub fn is(&self, other: &Operand) -> bool {
        (self.block, self.offset, self.rows, self.cols, self.dtype)
            == (
                other.block,
                other.offset,
                other.rows,
                other.cols,
                other.dtype,
            )
    }
}

/// An operation, as PyTorch's ATen names them where it has them. The last five exist only
/// inside the executor: two operations in a row that one kernel runs (each writes every
/// output exactly as its two parts would).
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `c = op(a)·op(b) (+ bias)`: `addmm`, `mm`.
    Matmul {
        spec: Matmul,
        a: Operand,
        b: Operand,
        c: Operand,
        bias: Option<Operand>,
    },
    /// `dst = max(src, 0)`.
    Relu { src: Operand, dst: Operand },
    /// `x = max(x, 0)`: `relu_`.
    ReluInPlace { x: Operand },
    /// `dst[j] = Σ_i src[i, j]`: a bias's gradient (`sum(0)`).
    Colsum { src: Operand, dst: Operand },
    /// `param -= lr · grad`.
    Sgd {
        param: Operand,
        grad: Operand,
        lr: f32,
    },
    /// `_foreach_add_(params, grads, alpha=-lr)`: every pair's SGD update.
    SgdForeach {
        pairs: Vec<(Operand, Operand)>,
        lr: f32,
    },
    /// One Adam update of `param`, `m`, `v`.
    Adam {
        param: Operand,
        grad: Operand,
        m: Operand,
        v: Operand,
        hp: AdamStep,
    },
    /// `dst = sqrt(v) · scale + eps`.
    AdamDenom {
        v: Operand,
        dst: Operand,
        scale: f32,
        eps: f32,
    },
    /// `x *= factor`, `flag = 1` if a result is not finite: `_amp_foreach_non_finite_check_and_unscale_`.
    UnscaleCheck {
        x: Operand,
        factor: f32,
        flag: Operand,
    },
    /// `zero_`.
    Zero { x: Operand },
    /// `dst = src` converted to `dst`'s type: `_to_copy`, `clone`.
    Copy { src: Operand, dst: Operand },
    /// `dst = grad · (output > 0)`.
    ThresholdBackward {
        grad: Operand,
        output: Operand,
        dst: Operand,
    },
    /// Row-wise `log_softmax`.
    LogSoftmax { x: Operand, out: Operand },
    /// `nll_loss_forward`: the loss and the total weight.
    NllLoss {
        logp: Operand,
        labels: Operand,
        loss: Operand,
        total_weight: Operand,
    },
    NllLossBackward {
        grad: Operand,
        labels: Operand,
        total_weight: Operand,
        out: Operand,
    },
    /// `_log_softmax_backward_data`.
    LogSoftmaxBackward {
        grad: Operand,
        logp: Operand,
        out: Operand,
    },
    /// `fill_`.
    Fill { x: Operand, value: f32 },
    /// `mul_`.
    Scale { x: Operand, factor: f32 },
    /// `add_`.
    Add { dst: Operand, src: Operand },

    /// [`Op::Matmul`] then [`Op::Relu`] of its output.
    MatmulRelu { product: Box<Op>, out: Operand },
    /// [`Op::Matmul`] then [`Op::Colsum`] of its `b`.
    MatmulColsum { product: Box<Op>, sums: Operand },
    /// [`Op::LogSoftmax`] then [`Op::NllLoss`] of its output.
    LogSoftmaxNllLoss { x: Operand, loss: Box<Op> },
    /// [`Op::Fill`] then [`Op::NllLossBackward`] of the filled gradient.
    FillNllLossBackward { value: f32, backward: Box<Op> },
    /// [`Op::Adam`] then [`Op::AdamDenom`] of its updated `v`.
    AdamWithDenom { step: Box<Op>, denom: Box<Op> },
}

impl Op {
    /// Every tensor the operation reads or writes.
    pub fn operands(&self) -> Vec<&Operand> {
        use Op::*;
        match self {
            Matmul { a, b, c, bias, .. } => [Some(a), Some(b), Some(c), bias.as_ref()]
                .into_iter()
                .flatten()
                .collect(),
            Relu { src, dst } | Colsum { src, dst } | Copy { src, dst } => vec![src, dst],
            Add { dst, src } => vec![dst, src],
            ReluInPlace { x } | Zero { x } | Fill { x, .. } | Scale { x, .. } => vec![x],
            Sgd { param, grad, .. } => vec![param, grad],
            SgdForeach { pairs, .. } => pairs.iter().flat_map(|(p, g)| [p, g]).collect(),
            Adam {
                param, grad, m, v, ..
            } => vec![param, grad, m, v],
            AdamDenom { v, dst, .. } => vec![v, dst],
            UnscaleCheck { x, flag, .. } => vec![x, flag],
            ThresholdBackward { grad, output, dst } => vec![grad, output, dst],
            LogSoftmax { x, out } => vec![x, out],
            NllLoss {
                logp,
                labels,
                loss,
                total_weight,
            } => vec![logp, labels, loss, total_weight],
            NllLossBackward {
                grad,
                labels,
                total_weight,
                out,
            } => vec![grad, labels, total_weight, out],
            LogSoftmaxBackward { grad, logp, out } => vec![grad, logp, out],
            MatmulRelu { product, out } => with(product.operands(), out),
            MatmulColsum { product, sums } => with(product.operands(), sums),
            LogSoftmaxNllLoss { x, loss } => with(loss.operands(), x),
            FillNllLossBackward { backward, .. } => backward.operands(),
            AdamWithDenom { step, denom } => {
                let mut all = step.operands();
                all.extend(denom.operands());
                all
            }
        }
    }

    /// Whether the operation touches `block`.
    pub fn uses(&self, block: BlockAddr) -> bool {
        self.operands().iter().any(|o| o.block == block)
    }
}

fn with<'a>(mut all: Vec<&'a Operand>, one: &'a Operand) -> Vec<&'a Operand> {
    all.push(one);
    all
}
