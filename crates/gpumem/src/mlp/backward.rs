//! `loss.backward()`: the tape walked from its end, each node making its input's gradient and
//! letting go of what it saved, and `AccumulateGrad` filling `.grad`.

use super::Mlp;
use super::autograd::{Node, Tape};
use super::forward::{cast, scaled};
use crate::error::Error;
use crate::ops::{self, Matmul};
use crate::role::Role;
use crate::tensor::Tensor;

/// `A·Bᵀ`: the gradient flowing back to a layer's input.
const NT: Matmul = Matmul {
    trans_a: false,
    trans_b: true,
};

/// `Aᵀ·B`: a weight's gradient, summed over the rows.
const TN: Matmul = Matmul {
    trans_a: true,
    trans_b: false,
};

/// The gradient a backward pass starts from.
pub(super) enum Seed {
    /// `torch.ones_like(loss)`, allocated by the caller and filled here, before the first
    /// node's backward.
    Ones(Tensor),
    /// A gradient received (a pipeline stage's, from the stage after it).
    Received(Tensor),
}

impl Mlp {
    /// `loss.backward()` from `seed`: every node in reverse, each freeing what it saved and
    /// the gradient it received once it has run. Returns the layers computed again.
    pub(super) fn backward(&mut self, tape: Tape, seed: Seed) -> Result<u64, Error> {
        self.backward_to_input(tape, seed)
            .map(|(recomputed, _)| recomputed)
    }

    /// [`Mlp::backward`], handing back the gradient of the tape's input when its first layer
    /// makes one (a pipeline stage sends it to the stage before).
    pub(super) fn backward_to_input(
        &mut self,
        tape: Tape,
        seed: Seed,
    ) -> Result<(u64, Option<Tensor>), Error> {
        let (seed, mut fill) = match seed {
            Seed::Ones(t) => (t, Some(1.0)),
            Seed::Received(t) => (t, None),
        };
        let mut grad = Some(seed);
        let mut recomputed = 0;
        // Autograd runs a CUDA backward pass on its device thread, with its own handle.
        let device = self.device.clone();
        device.on_autograd_thread(|| -> Result<(), Error> {
            for node in tape.into_backward_order() {
                let Some(g) = grad.take() else { break };
                if let Node::Checkpoint { layers, .. } = &node {
                    recomputed += layers.len() as u64;
                }
                grad = self.backward_node(node, g, fill.take())?;
            }
            Ok(())
        })?;
        // An empty tape: the seed is the gradient.
        if let (Some(value), Some(g)) = (fill, &grad) {
            ops::fill(g, value)?;
        }
        Ok((recomputed, grad))
    }

    /// One node's backward: the gradient for its input (`None` where none is needed).
    /// `fill`: the value `grad` is still to be filled with (the seed of ones).
    fn backward_node(
        &mut self,
        node: Node,
        grad: Tensor,
        fill: Option<f32>,
    ) -> Result<Option<Tensor>, Error> {
        let new = |rows, cols, dtype, label: &str| {
            Tensor::new(
                &self.device,
                rows,
                cols,
                dtype,
                Role::ActivationGradient,
                label,
            )
        };
        if let Some(value) = fill {
            ops::fill(&grad, value)?;
        }
        Ok(match node {
            Node::Scale { factor } => Some(scaled(
                &grad,
                factor,
                Role::ActivationGradient,
                "loss.grad (scaled)",
            )?),
            Node::NllLoss {
                logp,
                labels,
                total_weight,
            } => {
                let out = new(logp.rows(), logp.cols(), logp.dtype(), "nll_loss_backward")?;
                ops::nll_loss_backward(&grad, &labels, &total_weight, &out)?;
                Some(out)
            }
            Node::ToFloat32 { from } => Some(cast(
                &grad,
                from,
                Role::ActivationGradient,
                "log_softmax.grad (float16)",
            )?),
            Node::LogSoftmax { output } => {
                let out = new(output.rows(), output.cols(), output.dtype(), "y_pred.grad")?;
                ops::log_softmax_backward(&grad, &output, &out)?;
                Some(out)
            }
            Node::Relu { output } => {
                let out = new(output.rows(), output.cols(), output.dtype(), "relu.grad")?;
                ops::threshold_backward(&grad, &output, &out)?;
                Some(out)
            }
            Node::Linear {
                layer,
                input,
                weight,
                input_grad,
            } => {
                self.hook(|h| h.pre_backward(layer))?;
                let da = self.linear_backward(layer, input, weight, input_grad, grad)?;
                let mut grads = std::mem::take(&mut self.grads[layer]);
                let after = match &self.hooks {
                    Some(h) => h.borrow_mut().post_backward(layer, &mut grads),
                    None => Ok(()),
                };
                self.grads[layer] = grads;
                after?;
                da
            }
            Node::Checkpoint { layers, input } => {
                let mut sub = Tape::default();
                let mut cache = self.autocast_region();
                let out = self.blocks(layers, &input, Some(&mut sub), &mut cache)?;
                drop((out, cache, input));
                let mut g = Some(grad);
                for node in sub.into_backward_order() {
                    let Some(incoming) = g.take() else { break };
                    g = self.backward_node(node, incoming, None)?;
                }
                g
            }
        })
    }

    /// `AddmmBackward0`: the input's gradient (`dZ·Wᵀ`) first, then the weight's (`inputᵀ·dZ`)
    /// and the bias's (column sums); then the saved tensors and `dZ` are let go, and the
    /// parameters' gradients accumulated (`AccumulateGrad`, after a cast back to float32
    /// under autocast).
    fn linear_backward(
        &mut self,
        layer: usize,
        input: Tensor,
        weight: Option<Tensor>,
        input_grad: bool,
        dz: Tensor,
    ) -> Result<Option<Tensor>, Error> {
        let (rows, dtype) = (dz.rows(), dz.dtype());
        let params = self.layer_params(layer);
        let w = weight.as_ref().unwrap_or(&params.weight);
        let da = if input_grad {
            let da = Tensor::new(
                &self.device,
                rows,
                w.rows(),
                dtype,
                Role::ActivationGradient,
                &format!("a{}.grad", self.global(layer).wrapping_sub(1)),
            )?;
            self.device.cublas_product(false)?;
            ops::matmul(NT, &dz, w, &da, None)?;
            Some(da)
        } else {
            None
        };
        let cast_back = dtype != self.precision().parameters();
        let grad_label = |what: &str| {
            let name = format!("{}.grad", self.param_name(layer, what));
            if cast_back {
                format!("{name} (float16)")
            } else {
                name
            }
        };
        // `.grad` itself, or a part added into it (before autocast's cast back, or into a
        // `.grad` an earlier micro-batch made).
        let global = self.global(layer);
        let role = |part: bool| {
            if part {
                Role::GradientPart { layer: global }
            } else {
                Role::Gradient { layer: global }
            }
        };
        let g = &self.grads[layer];
        let (weight_made, bias_made) = (g.weight.is_some(), g.bias.is_some());
        let made = |bias: bool| if bias { bias_made } else { weight_made };
        let dw = Tensor::new(
            &self.device,
            input.cols(),
            dz.cols(),
            dtype,
            role(cast_back || made(false)),
            &grad_label("weight"),
        )?;
        // `mm` for the weight's gradient (its handle's workspaces, if this is its first).
        self.device.cublas_product(false)?;
        ops::matmul(TN, &input, &dz, &dw, None)?;
        let db = Tensor::new(
            &self.device,
            1,
            dz.cols(),
            dtype,
            role(cast_back || made(true)),
            &grad_label("bias"),
        )?;
        ops::colsum(&dz, &db)?;
        drop((input, weight, dz, params));
        if cast_back {
            let p = self.precision().parameters();
            let dw32 = cast(
                &dw,
                p,
                role(made(false)),
                &format!("{}.grad", self.param_name(layer, "weight")),
            )?;
            drop(dw);
            self.accumulate(layer, false, dw32)?;
            let db32 = cast(
                &db,
                p,
                role(made(true)),
                &format!("{}.grad", self.param_name(layer, "bias")),
            )?;
            drop(db);
            self.accumulate(layer, true, db32)?;
        } else {
            self.accumulate(layer, true, db)?;
            self.accumulate(layer, false, dw)?;
        }
        Ok(da)
    }

    /// `AccumulateGrad`: the first gradient becomes `.grad` (no copy); later ones are added
    /// into it and freed.
    fn accumulate(&mut self, layer: usize, bias: bool, g: Tensor) -> Result<(), Error> {
        let grads = &mut self.grads[layer];
        let slot = if bias {
            &mut grads.bias
        } else {
            &mut grads.weight
        };
        match slot {
            Some(existing) => ops::add(existing, &g)?,
            None => *slot = Some(g),
        }
        match &self.hooks {
            Some(h) => h.borrow_mut().grad_ready(layer, bias, slot),
            None => Ok(()),
        }
    }
}
