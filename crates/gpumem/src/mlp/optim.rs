//! `optimizer.zero_grad()`, `optimizer.step()` and `GradScaler`, with the memory PyTorch's
//! implementations use: state made lazily at the first step, `foreach` temporaries, the
//! scaler's scalars.

use super::Mlp;
use super::autograd::{Node, Tape};
use super::config::{ForeachDenom, GradScalerConfig, Optimizer, OptimizerImpl, ZeroGrad};
use super::forward::scaled;
use crate::error::Error;
use crate::ops::{self, AdamStep};
use crate::role::Role;
use crate::tensor::{DType, Tensor};

/// One parameter's optimizer state.
#[derive(Debug)]
enum ParamState {
    /// SGD with momentum: `momentum_buffer`.
    Momentum(Tensor),
    /// Adam: `exp_avg`, `exp_avg_sq`, and (fused only) the step count on the device.
    Adam {
        exp_avg: Tensor,
        exp_avg_sq: Tensor,
        _step: Option<Tensor>,
    },
}

/// The optimizer's state: empty until the first step.
#[derive(Debug, Default)]
pub(super) struct State {
    params: Vec<ParamState>,
    steps: u32,
}

/// `GradScaler`: its scale and growth tracker live on the device from the first
/// `scale(loss)`; the host keeps the value to compute with. The scale starts at
/// `init_scale`, doubles after `growth_interval` steps without an overflow and halves on an
/// overflow.
#[derive(Debug)]
pub(super) struct Scaler {
    tensors: Option<(Tensor, Tensor)>,
    scale: f32,
    good_steps: u32,
    growth_interval: u32,
}

impl Scaler {
    pub(super) fn new(config: GradScalerConfig) -> Self {
        Scaler {
            tensors: None,
            scale: config.init_scale,
            good_steps: 0,
            growth_interval: config.growth_interval,
        }
    }
}

impl Mlp {
    /// The parameters this card's optimizer updates, in PyTorch's order
    /// (`model.parameters()`: each layer's weight, then its bias), with their gradients.
    fn params(&self) -> Vec<(usize, bool, &Tensor, Option<&Tensor>)> {
        self.layers
            .iter()
            .zip(&self.grads)
            .enumerate()
            .flat_map(|(i, (l, g))| {
                [
                    (i, false, &l.weight, g.weight.as_ref()),
                    (i, true, &l.bias, g.bias.as_ref()),
                ]
            })
            .enumerate()
            .filter(|(index, _)| self.updates(*index))
            .map(|(_, p)| p)
            .collect()
    }

    /// `optimizer.zero_grad()`: frees the gradients (set to none) or fills them with zeros.
    pub(super) fn zero_grad(&mut self) -> Result<(), Error> {
        for g in &mut self.grads {
            match self.config.strategy.zero_grad {
                ZeroGrad::SetToNone => *g = Default::default(),
                ZeroGrad::Zero => {
                    for t in [&g.weight, &g.bias].into_iter().flatten() {
                        ops::zero(t)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `scaler.scale(loss)` under mixed precision: a new scalar `loss · scale` whose backward
    /// multiplies the seed by the scale.
    pub(super) fn scale_loss(
        &mut self,
        loss: &Tensor,
        tape: &mut Tape,
    ) -> Result<Option<Tensor>, Error> {
        if !self.config.strategy.scales_loss() {
            return Ok(None);
        }
        if self.scaler.tensors.is_none() {
            let scale = Tensor::new(
                &self.device,
                1,
                1,
                DType::F32,
                Role::LossScaler,
                "GradScaler scale",
            )?;
            ops::fill(&scale, self.scaler.scale)?;
            let growth = Tensor::new(
                &self.device,
                1,
                1,
                DType::U32,
                Role::LossScaler,
                "GradScaler growth tracker",
            )?;
            ops::zero(&growth)?;
            self.scaler.tensors = Some((scale, growth));
        }
        let factor = self.scaler.scale;
        let out = scaled(loss, factor, Role::Temporary, "scaled loss")?;
        tape.push(Node::Scale { factor });
        Ok(Some(out))
    }

    /// Sets mixed precision's loss scale (to see what happens without scaling, set 1).
    pub fn set_loss_scale(&mut self, scale: f32) -> Result<(), Error> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::Setup(format!(
                "the loss scale must be finite and positive, got {scale}"
            )));
        }
        self.scaler.scale = scale;
        if let Some((t, _)) = &self.scaler.tensors {
            ops::fill(t, scale)?;
        }
        Ok(())
    }

    /// The `GradScaler`'s current loss scale (1 without one).
    pub fn loss_scale(&self) -> f32 {
        if self.config.strategy.scales_loss() {
            self.scaler.scale
        } else {
            1.0
        }
    }

    /// `optimizer.step()` (through `scaler.step` and `scaler.update` under mixed precision).
    /// Returns whether the update was skipped because a gradient overflowed.
    pub(super) fn optimizer_step(&mut self) -> Result<bool, Error> {
        if !self.config.strategy.scales_loss() {
            self.update()?;
            return Ok(false);
        }
        // `unscale_`: 1/scale computed on the device in float64, then float32.
        let scalar =
            |dtype, label: &str| Tensor::new(&self.device, 1, 1, dtype, Role::Temporary, label);
        let scale64 = scalar(DType::F64, "scale (float64)")?;
        ops::fill(&scale64, self.scaler.scale)?;
        let inv64 = scalar(DType::F64, "1/scale (float64)")?;
        ops::fill(&inv64, 1.0 / self.scaler.scale)?;
        drop(scale64);
        let inv = scalar(DType::F32, "inv_scale")?;
        ops::fill(&inv, 1.0 / self.scaler.scale)?;
        drop(inv64);
        let found_inf = scalar(DType::F32, "found_inf")?;
        ops::zero(&found_inf)?;
        let per_device = scalar(DType::F32, "found_inf (per device)")?;
        let for_step = scalar(DType::F32, "found_inf (for the step)")?;
        for (_, _, _, g) in self.params() {
            if let Some(g) = g {
                ops::unscale_check(g, 1.0 / self.scaler.scale, &found_inf)?;
            }
        }
        ops::copy(&found_inf, &per_device)?;
        ops::copy(&found_inf, &for_step)?;
        drop((inv, found_inf, for_step));
        let finite = !self.device.info().executes || per_device.read::<f32>()?[0] == 0.0;
        if finite {
            self.update()?;
            self.scaler.good_steps += 1;
            if self.scaler.good_steps == self.scaler.growth_interval {
                self.scaler.scale *= 2.0;
                self.scaler.good_steps = 0;
            }
        } else {
            self.scaler.scale /= 2.0;
            self.scaler.good_steps = 0;
        }
        if let Some((t, _)) = &self.scaler.tensors {
            ops::fill(t, self.scaler.scale)?;
        }
        drop(per_device);
        Ok(!finite)
    }

    /// The optimizer's update of every parameter that has a gradient.
    fn update(&mut self) -> Result<(), Error> {
        if self.optim.params.is_empty() {
            self.optim.params = self.initial_state()?;
        }
        self.optim.steps += 1;
        let lr = self.config.optimizer.lr();
        match self.config.optimizer {
            Optimizer::Sgd { momentum: 0.0, .. } => {
                let params = self.params();
                let pairs: Vec<(&Tensor, &Tensor)> = params
                    .iter()
                    .filter_map(|(_, _, p, g)| g.as_ref().map(|g| (*p, *g)))
                    .collect();
                // Nothing is allocated: every implementation updates the same values.
                ops::sgd_foreach(&pairs, lr)
            }
            Optimizer::Sgd { momentum, .. } => self.momentum_update(lr, momentum),
            Optimizer::Adam {
                beta1, beta2, eps, ..
            } => self.adam_update(AdamStep {
                lr,
                beta1,
                beta2,
                eps,
                step: self.optim.steps,
            }),
        }
    }

    /// SGD with momentum: `buf = momentum·buf + g`, then `p -= lr·buf`.
    fn momentum_update(&self, lr: f32, momentum: f32) -> Result<(), Error> {
        for ((_, _, p, g), state) in self.params().iter().zip(&self.optim.params) {
            let (Some(g), ParamState::Momentum(buf)) = (g, state) else {
                continue;
            };
            // The first step's buffer is a clone of the gradient already.
            if self.optim.steps > 1 {
                ops::scale(buf, momentum)?;
                ops::add(buf, g)?;
            }
            ops::sgd(p, buf, lr)?;
        }
        Ok(())
    }

    /// Adam. Only foreach and for-loop Adam allocate denominators; the update itself runs
    /// as one fused kernel, and each denominator holds what PyTorch's does: foreach keeps
    /// every parameter's until the end ([`Mlp::foreach_denoms`]), the for-loop only the last
    /// one's.
    fn adam_update(&self, hp: AdamStep) -> Result<(), Error> {
        let scale = 1.0 / (1.0 - hp.beta2.powi(hp.step as i32)).sqrt();
        let out_of_place = self.config.strategy.foreach_denom == ForeachDenom::OutOfPlace;
        let mut roots = Vec::new();
        let mut last: Option<Tensor> = None;
        for ((i, bias, p, g), state) in self.params().iter().zip(&self.optim.params) {
            let (
                Some(g),
                ParamState::Adam {
                    exp_avg,
                    exp_avg_sq,
                    ..
                },
            ) = (g, state)
            else {
                continue;
            };
            let name = self.param_name(*i, if *bias { "bias" } else { "weight" });
            ops::adam(p, g, exp_avg, exp_avg_sq, hp)?;
            match self.config.strategy.optimizer_impl {
                OptimizerImpl::Foreach => {
                    // `_foreach_sqrt`'s square roots (`exp_avg_sq_sqrt`); since 2.1 the
                    // denominators themselves, `eps` added in place.
                    let root = self.temporary_like(p, &format!("{name} _foreach_sqrt"))?;
                    let eps = if out_of_place { 0.0 } else { hp.eps };
                    ops::adam_denom(exp_avg_sq, &root, scale, eps)?;
                    roots.push((root, *p, exp_avg_sq));
                }
                OptimizerImpl::ForLoop => {
                    let root = self.temporary_like(p, &format!("{name} sqrt"))?;
                    ops::adam_denom(exp_avg_sq, &root, 1.0, 0.0)?;
                    let d = self.temporary_like(p, &format!("{name} denom"))?;
                    ops::adam_denom(exp_avg_sq, &d, scale, hp.eps)?;
                    drop(root);
                    last = Some(d);
                }
                OptimizerImpl::Fused => {}
            }
        }
        let denoms = if out_of_place {
            self.foreach_denoms(&roots, scale, hp.eps)?
        } else {
            Vec::new()
        };
        // Freed as PyTorch frees them when `_multi_tensor_adam` returns: `denom` before the
        // square roots, each list from its last parameter.
        let roots = roots.into_iter().map(|(root, ..)| root);
        for t in denoms.into_iter().rev().chain(roots.rev()) {
            drop(t);
        }
        drop(last);
        Ok(())
    }

    /// PyTorch 2.0's `denom = torch._foreach_add(exp_avg_sq_sqrt, eps)`: a second list of
    /// parameter-sized temporaries, made after all the square roots ([`ForeachDenom`]).
    fn foreach_denoms(
        &self,
        roots: &[(Tensor, &Tensor, &Tensor)],
        scale: f32,
        eps: f32,
    ) -> Result<Vec<Tensor>, Error> {
        roots
            .iter()
            .map(|(root, p, exp_avg_sq)| {
                let label = root.label().replace("_foreach_sqrt", "_foreach_add");
                let d = self.temporary_like(p, &label)?;
                ops::adam_denom(exp_avg_sq, &d, scale, eps)?;
                Ok(d)
            })
            .collect()
    }

    /// A temporary of `p`'s shape and type, labelled `label`.
    fn temporary_like(&self, p: &Tensor, label: &str) -> Result<Tensor, Error> {
        Tensor::new(
            &self.device,
            p.rows(),
            p.cols(),
            p.dtype(),
            Role::Temporary,
            label,
        )
    }

    /// The state made at the first step, parameter by parameter in PyTorch's order.
    fn initial_state(&self) -> Result<Vec<ParamState>, Error> {
        let fused = self.config.strategy.optimizer_impl == OptimizerImpl::Fused;
        let mut state = Vec::new();
        for (i, bias, p, g) in self.params() {
            let name = self.param_name(i, if bias { "bias" } else { "weight" });
            let role = Role::OptimizerState {
                layer: self.global(i),
            };
            let like = |what: &str| {
                Tensor::new(
                    &self.device,
                    p.rows(),
                    p.cols(),
                    p.dtype(),
                    role,
                    &format!("{name}.{what}"),
                )
            };
            match self.config.optimizer {
                Optimizer::Sgd { momentum, .. } if momentum != 0.0 => {
                    let Some(g) = g else { continue };
                    let buf = like("momentum_buffer")?;
                    ops::copy(g, &buf)?;
                    state.push(ParamState::Momentum(buf));
                }
                Optimizer::Sgd { .. } => return Ok(Vec::new()),
                Optimizer::Adam { .. } => {
                    let step = if fused {
                        let s = Tensor::new(
                            &self.device,
                            1,
                            1,
                            DType::F32,
                            role,
                            &format!("{name}.step"),
                        )?;
                        ops::zero(&s)?;
                        Some(s)
                    } else {
                        None
                    };
                    let exp_avg = like("exp_avg")?;
                    ops::zero(&exp_avg)?;
                    let exp_avg_sq = like("exp_avg_sq")?;
                    ops::zero(&exp_avg_sq)?;
                    state.push(ParamState::Adam {
                        exp_avg,
                        exp_avg_sq,
                        _step: step,
                    });
                }
            }
        }
        Ok(state)
    }
}
