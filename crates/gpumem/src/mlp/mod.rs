//! The lesson's network: `inputs → L hidden layers of width H with ReLU → classes`, trained
//! with softmax cross-entropy by SGD or Adam.
//!
//! Memory that lives as long as the model is allocated here, in this order: every layer's
//! weight and bias, then their gradients, then (Adam only) the two state tensors per
//! parameter. A training step ([`Mlp::train_step`]) adds the batch and the activations on
//! top.

mod config;
mod step;

pub use config::{Checkpointing, MAX_LAYERS, MlpConfig, Optimizer, Precision, Strategy};
pub use step::{Batch, StepOutputs, StepResult, micro_batches};

use crate::device::Device;
use crate::error::Error;
use crate::exec::ops;
use crate::tensor::{DType, Tensor};
use rand::RngExt;

/// One dense layer's weight (`in × out`, so `y = x · W + b`) and bias (`1 × out`).
#[derive(Debug)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Tensor,
}

impl Linear {
    /// Labels follow PyTorch's names: `layer1.weight`, `layer1.weight.grad`,
    /// `layer1.weight.exp_avg`.
    fn new(
        device: &Device,
        shape: (u64, u64),
        dtype: DType,
        layer: usize,
        suffix: &str,
    ) -> Result<Linear, Error> {
        let label = |what: &str| format!("layer{layer}.{what}{suffix}");
        Ok(Linear {
            weight: Tensor::new(device, shape.0, shape.1, dtype, &label("weight"))?,
            bias: Tensor::new(device, 1, shape.1, dtype, &label("bias"))?,
        })
    }

    fn tensors(&self) -> [&Tensor; 2] {
        [&self.weight, &self.bias]
    }
}

/// Adam's two running averages for every parameter (PyTorch's `exp_avg`, `exp_avg_sq`).
#[derive(Debug)]
struct AdamState {
    exp_avg: Vec<Linear>,
    exp_avg_sq: Vec<Linear>,
    step: u32,
}

/// A network on a device, with its gradients and optimizer state.
#[derive(Debug)]
pub struct Mlp {
    config: MlpConfig,
    device: Device,
    layers: Vec<Linear>,
    grads: Vec<Linear>,
    adam: Option<AdamState>,
    /// Mixed precision's current loss scale, and the steps since it last changed.
    loss_scale: f32,
    good_steps: u32,
}

impl Mlp {
    /// Allocates and initialises the network like `torch.nn.Linear` does (uniform in
    /// ±1/√fan_in), deterministically from `seed`.
    pub fn new(device: &Device, config: &MlpConfig, seed: u64) -> Result<Mlp, Error> {
        config.validate()?;
        let shapes = config.layer_shapes();
        let dtype = config.strategy.precision.parameters();
        let named = |suffix: &str| -> Result<Vec<Linear>, Error> {
            shapes
                .iter()
                .enumerate()
                .map(|(i, &(fan_in, fan_out))| {
                    Linear::new(device, (fan_in, fan_out), dtype, i, suffix)
                })
                .collect()
        };
        let layers = named("")?;
        let grads = named(".grad")?;
        let adam = match config.optimizer {
            Optimizer::Sgd { .. } => None,
            Optimizer::Adam { .. } => Some(AdamState {
                exp_avg: named(".exp_avg")?,
                exp_avg_sq: named(".exp_avg_sq")?,
                step: 0,
            }),
        };
        let mlp = Mlp {
            config: config.clone(),
            device: device.clone(),
            layers,
            grads,
            adam,
            loss_scale: step::INITIAL_LOSS_SCALE,
            good_steps: 0,
        };
        if device.info().executes {
            mlp.initialise(seed)?;
        }
        Ok(mlp)
    }

    fn initialise(&self, seed: u64) -> Result<(), Error> {
        let mut rng = crate::data::rng(seed);
        for layer in &self.layers {
            let bound = 1.0 / (layer.weight.rows() as f32).sqrt();
            for t in layer.tensors() {
                let values: Vec<f32> = (0..t.len())
                    .map(|_| rng.random_range(-bound..bound))
                    .collect();
                t.write_f32(&values)?;
            }
        }
        if let Some(adam) = &self.adam {
            for l in adam.exp_avg.iter().chain(&adam.exp_avg_sq) {
                for t in l.tensors() {
                    ops::zero(t)?;
                }
            }
        }
        Ok(())
    }

    pub fn config(&self) -> &MlpConfig {
        &self.config
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn layers(&self) -> &[Linear] {
        &self.layers
    }

    pub fn gradients(&self) -> &[Linear] {
        &self.grads
    }

    /// Number of learnable values (weights and biases).
    pub fn parameter_count(&self) -> u64 {
        self.config.parameter_count()
    }

    /// Sets mixed precision's loss scale (to see what happens without scaling, set 1).
    pub fn set_loss_scale(&mut self, scale: f32) -> Result<(), Error> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::Setup(format!(
                "the loss scale must be finite and positive, got {scale}"
            )));
        }
        self.loss_scale = scale;
        Ok(())
    }

    /// Mixed precision's current loss scale (1 when not mixed).
    pub fn loss_scale(&self) -> f32 {
        if self.config.strategy.precision == Precision::Mixed {
            self.loss_scale
        } else {
            1.0
        }
    }

    /// Applies the optimizer to every parameter with the current gradients.
    fn update(&mut self) -> Result<(), Error> {
        let Some(state) = &mut self.adam else {
            let lr = self.config.optimizer.lr();
            for (p, g) in self.layers.iter().zip(&self.grads) {
                for (pt, gt) in p.tensors().into_iter().zip(g.tensors()) {
                    ops::sgd(pt, gt, lr)?;
                }
            }
            return Ok(());
        };
        state.step += 1;
        let (beta1, beta2, eps) = match self.config.optimizer {
            Optimizer::Adam {
                beta1, beta2, eps, ..
            } => (beta1, beta2, eps),
            Optimizer::Sgd { .. } => (0.9, 0.999, 1e-8),
        };
        let hp = ops::AdamStep {
            lr: self.config.optimizer.lr(),
            beta1,
            beta2,
            eps,
            step: state.step,
        };
        let params = self.layers.iter().zip(&self.grads);
        for ((p, g), (m, v)) in params.zip(state.exp_avg.iter().zip(&state.exp_avg_sq)) {
            for i in 0..2 {
                ops::adam(
                    p.tensors()[i],
                    g.tensors()[i],
                    m.tensors()[i],
                    v.tensors()[i],
                    hp,
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
