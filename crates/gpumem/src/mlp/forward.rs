//! The forward pass as PyTorch runs `nn.Sequential` of `Linear` and `ReLU` layers, with
//! `torch.autocast` and `torch.utils.checkpoint` where the strategy asks for them, and the
//! loss as `F.cross_entropy` decomposes: `log_softmax`, then `nll_loss`.

use super::autograd::{Node, Tape};
use super::config::{Checkpointing, Precision};
use super::{Mlp, param_label};
use crate::error::Error;
use crate::ops::{self, Matmul};
use crate::role::Role;
use crate::tensor::{DType, Tensor};

const NN: Matmul = Matmul {
    trans_a: false,
    trans_b: false,
};

/// Autocast's cast cache: the float16 copy of each parameter made by its first use inside
/// an autocast region, kept until the region ends (then freed unless a backward node saved
/// it).
#[derive(Debug, Default)]
pub(super) struct CastCache {
    /// `(layer, is_bias)` → the copy.
    copies: Vec<((usize, bool), Tensor)>,
}

impl CastCache {
    fn get(&mut self, layer: usize, is_bias: bool, param: &Tensor) -> Result<Tensor, Error> {
        if let Some((_, t)) = self.copies.iter().find(|(k, _)| *k == (layer, is_bias)) {
            return Ok(t.clone());
        }
        let what = if is_bias { "bias" } else { "weight" };
        let label = format!("{} (float16 copy)", param_label(layer, what));
        let copy = cast(param, DType::F16, Role::ParameterCopy { layer }, &label)?;
        self.copies.push(((layer, is_bias), copy.clone()));
        Ok(copy)
    }
}

/// A new tensor holding `src` converted to `dtype` (`_to_copy`).
pub(super) fn cast(src: &Tensor, dtype: DType, role: Role, label: &str) -> Result<Tensor, Error> {
    let dst = Tensor::new(src.device(), src.rows(), src.cols(), dtype, role, label)?;
    ops::copy(src, &dst)?;
    Ok(dst)
}

/// A new scalar `src · factor` (`loss / k`, `scaler.scale(loss)`, and their backward).
pub(super) fn scaled(src: &Tensor, factor: f32, role: Role, label: &str) -> Result<Tensor, Error> {
    let dst = cast(src, src.dtype(), role, label)?;
    ops::scale(&dst, factor)?;
    Ok(dst)
}

/// The segments of hidden layers for `checkpointing`, each with whether it is checkpointed:
/// `torch.utils.checkpoint_sequential`'s rule, every segment but the last.
pub(crate) fn segments(
    checkpointing: Checkpointing,
    layers: usize,
) -> Vec<(std::ops::Range<usize>, bool)> {
    if checkpointing == Checkpointing::Off {
        return vec![(0..layers, false)];
    }
    let g = checkpointing.segment(layers as u64) as usize;
    let starts: Vec<usize> = (0..layers).step_by(g).collect();
    let last = starts.len() - 1;
    starts
        .iter()
        .enumerate()
        .map(|(n, &s)| {
            let checkpointed = n < last || matches!(checkpointing, Checkpointing::Each(_));
            (s..(s + g).min(layers), checkpointed)
        })
        .collect()
}

impl Mlp {
    pub(super) fn precision(&self) -> Precision {
        self.config.strategy.precision
    }

    fn autocast(&self) -> bool {
        self.precision() == Precision::Mixed
    }

    /// A cast cache when autocast is on.
    pub(super) fn autocast_region(&self) -> Option<CastCache> {
        self.autocast().then(CastCache::default)
    }

    /// Layer `i`'s `addmm`: a new `rows × out` tensor, float16 under autocast.
    pub(super) fn linear(
        &self,
        i: usize,
        input: &Tensor,
        tape: Option<&mut Tape>,
        cache: &mut Option<CastCache>,
    ) -> Result<Tensor, Error> {
        self.hook(|h| h.pre_forward(i))?;
        let z = self.linear_product(i, input, tape, cache)?;
        self.hook(|h| h.post_forward(i))?;
        Ok(z)
    }

    /// [`Mlp::linear`] between the hooks: the parameters it uses are let go before the
    /// post-forward hook runs (FSDP's reshard frees them then).
    fn linear_product(
        &self,
        i: usize,
        input: &Tensor,
        tape: Option<&mut Tape>,
        cache: &mut Option<CastCache>,
    ) -> Result<Tensor, Error> {
        let layer = &self.layer_params(i);
        let input_grad = self.global(i) > 0;
        let label = if self.is_output(i) {
            "y_pred".to_string()
        } else {
            format!("z{}", self.global(i))
        };
        let (input, weight, bias) = match cache {
            Some(cache) => {
                let bias = cache.get(self.global(i), true, &layer.bias)?;
                let weight = cache.get(self.global(i), false, &layer.weight)?;
                let input = if input.dtype() == DType::F16 {
                    input.clone()
                } else {
                    cast(
                        input,
                        DType::F16,
                        Role::Forward,
                        &format!("{} (float16 copy)", input.label()),
                    )?
                };
                (input, Some(weight), Some(bias))
            }
            None => (input.clone(), None, None),
        };
        let w = weight.as_ref().unwrap_or(&layer.weight);
        let dtype = if cache.is_some() {
            DType::F16
        } else {
            self.precision().parameters()
        };
        // Under an in-place ReLU, `z` is the activation autograd saves.
        let role = if self.is_output(i) {
            Role::Prediction
        } else if self.config.strategy.relu_inplace {
            Role::Activation {
                layer: self.global(i),
            }
        } else {
            Role::Forward
        };
        let z = Tensor::new(&self.device, input.rows(), w.cols(), dtype, role, &label)?;
        // `addmm` makes its output, then sets its handle up (the first time, its workspaces).
        self.device.cublas_product(true)?;
        let bias = bias.as_ref().unwrap_or(&layer.bias);
        ops::matmul(NN, &input, w, &z, Some(bias))?;
        if let Some(tape) = tape {
            tape.push(Node::Linear {
                layer: i,
                input,
                weight: weight.filter(|_| input_grad),
                input_grad,
            });
        }
        Ok(z)
    }

    /// `relu(z)` into a new tensor, or `relu_(z)` in place; the node saves the output.
    pub(super) fn relu(
        &self,
        i: usize,
        z: Tensor,
        tape: Option<&mut Tape>,
    ) -> Result<Tensor, Error> {
        let a = if self.config.strategy.relu_inplace {
            ops::relu_(&z)?;
            z
        } else {
            let (layer, label) = (self.global(i), format!("a{}", self.global(i)));
            let role = Role::Activation { layer };
            let a = Tensor::new(&self.device, z.rows(), z.cols(), z.dtype(), role, &label)?;
            ops::relu(&z, &a)?;
            a
        };
        if let Some(tape) = tape {
            tape.push(Node::Relu { output: a.clone() });
        }
        Ok(a)
    }

    /// Hidden layers `layers` from `input`, as a function `h = relu(linear(h))` runs them:
    /// the running input is let go only when the next activation exists.
    pub(super) fn blocks(
        &self,
        layers: std::ops::Range<usize>,
        input: &Tensor,
        mut tape: Option<&mut Tape>,
        cache: &mut Option<CastCache>,
    ) -> Result<Tensor, Error> {
        let mut h = input.clone();
        for i in layers {
            let z = self.linear(i, &h, tape.as_deref_mut(), cache)?;
            h = self.relu(i, z, tape.as_deref_mut())?;
        }
        Ok(h)
    }

    /// `model(x)`: the hidden layers (checkpointed segments save only their input) and the
    /// output layer; returns `y_pred`.
    pub(super) fn forward_pass(
        &self,
        x: &Tensor,
        tape: &mut Tape,
        cache: &mut Option<CastCache>,
    ) -> Result<Tensor, Error> {
        let mut h = x.clone();
        let layers = self.config.layers as usize;
        for (range, checkpointed) in segments(self.config.strategy.checkpointing, layers) {
            if checkpointed {
                let out = self.blocks(range.clone(), &h, None, cache)?;
                tape.push(Node::Checkpoint {
                    layers: range,
                    input: h,
                });
                h = out;
            } else {
                h = self.blocks(range, &h, Some(tape), cache)?;
            }
        }
        self.linear(layers, &h, Some(tape), cache)
    }

    /// `F.cross_entropy(y_pred, y)` as `log_softmax` then `nll_loss`. Under autocast the
    /// log-softmax runs in float16 and its output is cast to float32 for the loss (CUDA's
    /// policy). Returns the loss, one value.
    pub(super) fn cross_entropy(
        &self,
        y_pred: &Tensor,
        y: &Tensor,
        tape: &mut Tape,
    ) -> Result<Tensor, Error> {
        let (rows, classes) = (y_pred.rows(), y_pred.cols());
        let mut logp = Tensor::new(
            &self.device,
            rows,
            classes,
            y_pred.dtype(),
            Role::Forward,
            "log_softmax",
        )?;
        ops::log_softmax(y_pred, &logp)?;
        let cast_first = logp.dtype() == DType::F16;
        tape.push(Node::LogSoftmax {
            output: logp.clone(),
        });
        if cast_first {
            logp = cast(
                &logp,
                DType::F32,
                Role::Forward,
                "log_softmax (float32 copy)",
            )?;
            tape.push(Node::ToFloat32 { from: DType::F16 });
        }
        let dtype = logp.dtype();
        let loss = Tensor::new(&self.device, 1, 1, dtype, Role::Forward, "loss")?;
        let total_weight = Tensor::new(&self.device, 1, 1, dtype, Role::Forward, "total_weight")?;
        ops::nll_loss(&logp, y, &loss, &total_weight)?;
        tape.push(Node::NllLoss {
            logp,
            labels: y.clone(),
            total_weight,
        });
        Ok(loss)
    }
}
