//! The lesson's network: `inputs → L hidden layers of width H with ReLU → classes`, trained
//! with softmax cross-entropy by SGD or Adam — step by step as PyTorch 2.x runs it.
//!
//! Only the parameters are allocated when the model is built (`model.to(device)`). Gradients
//! appear during the first backward pass and optimizer state at the first update, as with
//! PyTorch's lazy `.grad` and optimizer state; `zero_grad()` frees the gradients again unless
//! [`ZeroGrad::Zero`] is chosen. A training step ([`Mlp::train_step`]) adds the batch, the
//! activations its [autograd tape](autograd) saves, and the step's temporaries.

mod autograd;
mod backward;
mod config;
mod eval;
mod forward;
pub(crate) mod hooks;
mod optim;
mod step;

pub use config::{
    Checkpointing, LossWeighting, MAX_LAYERS, MlpConfig, Optimizer, OptimizerImpl, Precision,
    Strategy, ZeroGrad,
};
pub(crate) use forward::segments;
pub(crate) use step::planned_micro_batches;
pub use step::{Batch, StepOutputs, StepResult, micro_batches};

use crate::device::Device;
use crate::error::Error;
use crate::tensor::{DType, Tensor};
use rand::RngExt;

/// One dense layer's weight (`in × out`, so `y = x · W + b`) and bias (`1 × out`).
#[derive(Debug, Clone)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Tensor,
}

impl Linear {
    /// Labels follow PyTorch's names: `layer1.weight` (its gradient `layer1.weight.grad`,
    /// Adam's state `layer1.weight.exp_avg`).
    fn new(
        device: &Device,
        shape: (u64, u64),
        dtype: DType,
        layer: usize,
    ) -> Result<Linear, Error> {
        Ok(Linear {
            weight: Tensor::new(
                device,
                shape.0,
                shape.1,
                dtype,
                &param_label(layer, "weight"),
            )?,
            bias: Tensor::new(device, 1, shape.1, dtype, &param_label(layer, "bias"))?,
        })
    }

    pub(crate) fn tensors(&self) -> [&Tensor; 2] {
        [&self.weight, &self.bias]
    }
}

/// `layer{i}.{what}`, PyTorch's name for a parameter.
fn param_label(layer: usize, what: &str) -> String {
    format!("layer{layer}.{what}")
}

/// A layer's gradients, as PyTorch's `.grad`: `None` until a backward pass makes them, and
/// again after `zero_grad()` (set to none).
#[derive(Debug, Default)]
pub struct Grads {
    pub weight: Option<Tensor>,
    pub bias: Option<Tensor>,
}

/// What the lesson's loop keeps between steps: `y_pred` and `loss` are loop variables, so
/// the previous step's stay alive until this step's forward pass rebinds them.
#[derive(Debug, Default)]
struct Kept {
    y_pred: Option<Tensor>,
    loss: Option<Tensor>,
}

/// Which part of a step is running: where an out-of-memory error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pass {
    /// Building the model: its parameters.
    #[default]
    Model,
    /// `y_pred = model(x)` and the loss.
    Forward,
    /// `loss.backward()`.
    Backward,
    /// `optimizer.step()` (and `zero_grad()`).
    Optimizer,
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Pass::Model => "model",
            Pass::Forward => "forward pass",
            Pass::Backward => "backward pass",
            Pass::Optimizer => "optimizer step",
        })
    }
}

/// A network on a device, with its gradients and optimizer state once it has them.
#[derive(Debug)]
pub struct Mlp {
    config: MlpConfig,
    device: Device,
    layers: Vec<Linear>,
    grads: Vec<Grads>,
    optim: optim::State,
    scaler: optim::Scaler,
    kept: Kept,
    pass: Pass,
    /// Plan only the first this many micro-batches of each step (see
    /// [`crate::fit::measure_update`]).
    micro_batch_limit: Option<u64>,
    /// A multi-card scheme's hooks ([`hooks::StepHooks`]), if one drives this network.
    hooks: Option<hooks::SharedHooks>,
}

impl Mlp {
    /// Allocates and initialises the network like `torch.nn.Linear` does (uniform in
    /// ±1/√fan_in), deterministically from `seed`. Only the parameters are allocated.
    pub fn new(device: &Device, config: &MlpConfig, seed: u64) -> Result<Mlp, Error> {
        config.validate()?;
        let dtype = config.strategy.precision.parameters();
        let layers = config
            .layer_shapes()
            .iter()
            .enumerate()
            .map(|(i, &shape)| Linear::new(device, shape, dtype, i))
            .collect::<Result<Vec<_>, _>>()?;
        let mlp = Mlp {
            grads: layers.iter().map(|_| Grads::default()).collect(),
            config: config.clone(),
            device: device.clone(),
            layers,
            optim: optim::State::default(),
            scaler: optim::Scaler::default(),
            kept: Kept::default(),
            pass: Pass::Model,
            micro_batch_limit: None,
            hooks: None,
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

    /// Every layer's gradients (`None` where no backward pass has made them).
    pub fn gradients(&self) -> &[Grads] {
        &self.grads
    }

    /// The part of the step that ran last: where an out-of-memory error came from.
    pub fn pass(&self) -> Pass {
        self.pass
    }

    /// Number of learnable values (weights and biases).
    pub fn parameter_count(&self) -> u64 {
        self.config.parameter_count()
    }

    /// Runs only the first `n` micro-batches of each step and the last (on the `plan`
    /// backing, where the ones between repeat the second's allocations).
    pub(crate) fn limit_micro_batches(&mut self, n: u64) {
        self.micro_batch_limit = Some(n);
    }

    /// Drops what the loop kept from the last step (`y_pred`, `loss`), as `del y_pred, loss`.
    pub fn release_outputs(&mut self) {
        self.kept = Kept::default();
    }
}

#[cfg(test)]
mod tests;
