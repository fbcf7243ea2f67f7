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
mod batch;
mod config;
mod eval;
mod forward;
pub(crate) mod hooks;
mod optim;
mod stage;
mod step;

pub use batch::Batch;
pub use config::{
    Checkpointing, ForeachDenom, GradScalerConfig, LossWeighting, MAX_LAYERS, MlpConfig, Optimizer,
    OptimizerImpl, Precision, Strategy, ZeroGrad,
};
pub(crate) use forward::segments;
pub(crate) use stage::StageForward;
pub(crate) use step::planned_micro_batches;
pub use step::{StepOutputs, StepResult, micro_batches};

use crate::device::Device;
use crate::error::Error;
use crate::role::Role;
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
                Role::Parameter { layer },
                &param_label(layer, "weight"),
            )?,
            bias: Tensor::new(
                device,
                1,
                shape.1,
                dtype,
                Role::Parameter { layer },
                &param_label(layer, "bias"),
            )?,
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
    /// Plan only the first this many micro-batches of each step (the fit search's
    /// `measure_update`, a floor above, sets it).
    micro_batch_limit: Option<u64>,
    /// A multi-card scheme's hooks ([`hooks::StepHooks`]), if one drives this network.
    hooks: Option<hooks::SharedHooks>,
    /// The network's index of `layers[0]`: 0, except for a pipeline stage holding later
    /// layers ([`Mlp::stage`]).
    first_layer: usize,
}

impl Mlp {
    /// Allocates and initialises the network like `torch.nn.Linear` does (uniform in
    /// ±1/√fan_in), deterministically from `seed`. Only the parameters are allocated.
    pub fn new(device: &Device, config: &MlpConfig, seed: u64) -> Result<Mlp, Error> {
        Self::stage(device, config, seed, 0..config.layers as usize + 1)
    }

    /// The layers `range` of the network (its `Linear`s, counted from 0 to the output layer
    /// `config.layers`), initialised as the whole network would be: one pipeline stage.
    pub(crate) fn stage(
        device: &Device,
        config: &MlpConfig,
        seed: u64,
        range: std::ops::Range<usize>,
    ) -> Result<Mlp, Error> {
        config.validate()?;
        let shapes = config.layer_shapes();
        if range.is_empty() || range.end > shapes.len() {
            return Err(Error::Setup(format!(
                "a stage needs some of the network's {} layers, got {range:?}",
                shapes.len()
            )));
        }
        let dtype = config.strategy.precision.parameters();
        let layers = range
            .clone()
            .map(|i| Linear::new(device, shapes[i], dtype, i))
            .collect::<Result<Vec<_>, _>>()?;
        let mlp = Mlp {
            grads: layers.iter().map(|_| Grads::default()).collect(),
            config: config.clone(),
            device: device.clone(),
            layers,
            optim: optim::State::default(),
            scaler: optim::Scaler::new(config.strategy.scaler),
            kept: Kept::default(),
            pass: Pass::Model,
            micro_batch_limit: None,
            hooks: None,
            first_layer: range.start,
        };
        if device.info().executes {
            mlp.initialise(seed, &shapes)?;
        }
        Ok(mlp)
    }

    /// Draws every layer's values in order (so a stage gets what the whole network would)
    /// and writes this network's.
    fn initialise(&self, seed: u64, shapes: &[(u64, u64)]) -> Result<(), Error> {
        let mut rng = crate::data::rng(seed);
        for (i, &(rows, cols)) in shapes.iter().enumerate() {
            let bound = 1.0 / (rows as f32).sqrt();
            let mut draw =
                |n: u64| -> Vec<f32> { (0..n).map(|_| rng.random_range(-bound..bound)).collect() };
            let (weight, bias) = (draw(rows * cols), draw(cols));
            if let Some(layer) = i
                .checked_sub(self.first_layer)
                .and_then(|j| self.layers.get(j))
            {
                layer.weight.write_f32(&weight)?;
                layer.bias.write_f32(&bias)?;
            }
        }
        Ok(())
    }

    /// The network's index of `layers[i]` (its labels use it).
    pub(super) fn global(&self, i: usize) -> usize {
        self.first_layer + i
    }

    /// Whether `layers[i]` is the network's output layer (no ReLU after it).
    pub(super) fn is_output(&self, i: usize) -> bool {
        self.global(i) == self.config.layers as usize
    }

    /// PyTorch's name for a parameter of `layers[i]`: `layer{global}.{what}`.
    pub(super) fn param_name(&self, i: usize, what: &str) -> String {
        param_label(self.global(i), what)
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
