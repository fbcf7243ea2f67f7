//! A small autograd tape with PyTorch's rules for what stays alive.
//!
//! Each operation of the forward pass that needs something for its backward pass pushes a
//! [`Node`] holding exactly what PyTorch's node for it saves (`AddmmBackward0` its input and,
//! when the input needs a gradient, the weight; `ReluBackward0` its output; …). Tensors are
//! reference-counted ([`Tensor`] clones share a storage), so a tensor's memory is freed at
//! the moment its last holder lets go: the Python variable that named it, or the last node
//! that saved it — when that node's backward has run, as autograd releases saved variables
//! after use (`retain_graph=False`). The backward pass walks the tape from the end, which for
//! this chain of layers is the order PyTorch's engine runs the nodes in.

use crate::tensor::Tensor;
use std::ops::Range;

/// What one forward operation saved for its backward pass.
#[derive(Debug)]
pub(super) enum Node {
    /// `addmm(bias, input, weightᵀ)` of layer `layer`: saves `input` (for the weight's
    /// gradient) and, when the input needs a gradient, `weight` (autocast's float16 copy;
    /// `None` means the parameter itself, which is alive anyway).
    Linear {
        layer: usize,
        input: Tensor,
        weight: Option<Tensor>,
        input_grad: bool,
    },
    /// `relu` (or `relu_`): saves its output.
    Relu { output: Tensor },
    /// `_log_softmax`: saves its output.
    LogSoftmax { output: Tensor },
    /// `_to_copy` of the log-probabilities to float32 (autocast runs the loss in float32):
    /// saves nothing; its backward casts the gradient back.
    ToFloat32 { from: crate::tensor::DType },
    /// `nll_loss_forward`: saves the log-probabilities, the labels and `total_weight`.
    NllLoss {
        logp: Tensor,
        labels: Tensor,
        total_weight: Tensor,
    },
    /// Multiplying the loss by a number (`loss / k` for accumulation, `GradScaler.scale`):
    /// saves nothing; its backward makes a new scalar.
    Scale { factor: f32 },
    /// `torch.utils.checkpoint` (non-reentrant) around the hidden layers `layers`: saves
    /// only the segment's input; its backward computes the segment again.
    Checkpoint { layers: Range<usize>, input: Tensor },
}

/// The nodes of one forward pass, in the order they were made.
#[derive(Debug, Default)]
pub(crate) struct Tape {
    nodes: Vec<Node>,
}

impl Tape {
    pub(super) fn push(&mut self, node: Node) {
        self.nodes.push(node);
    }

    /// The nodes, last made first: the order of the backward pass.
    pub(super) fn into_backward_order(self) -> impl Iterator<Item = Node> {
        self.nodes.into_iter().rev()
    }
}
