//! What network to build and how to train it, checked before anything is allocated.

use crate::data::{CLASSES, FEATURES};
use crate::device::Error;
use std::fmt;

/// The deepest network the engine builds (one allocation per tensor: far deeper would take
/// minutes just to plan, and no card holds it at any useful width).
pub const MAX_LAYERS: u64 = 100_000;

/// The optimizer and its settings.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "name")]
pub enum Optimizer {
    /// Plain stochastic gradient descent: no state beyond the gradients.
    Sgd { lr: f32 },
    /// Adam: two running averages per parameter (PyTorch's defaults for the rest).
    Adam {
        lr: f32,
        beta1: f32,
        beta2: f32,
        eps: f32,
    },
}

impl Optimizer {
    /// The lesson's optimizer: SGD with learning rate 0.001.
    pub const LESSON: Optimizer = Optimizer::Sgd { lr: 0.001 };

    pub fn adam(lr: f32) -> Optimizer {
        Optimizer::Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }

    pub fn lr(&self) -> f32 {
        match *self {
            Optimizer::Sgd { lr } | Optimizer::Adam { lr, .. } => lr,
        }
    }

    /// Values of optimizer state kept per parameter.
    pub fn states_per_parameter(&self) -> u64 {
        match self {
            Optimizer::Sgd { .. } => 0,
            Optimizer::Adam { .. } => 2,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Optimizer::Sgd { .. } => "sgd",
            Optimizer::Adam { .. } => "adam",
        }
    }
}

impl fmt::Display for Optimizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (lr {})", self.name(), self.lr())
    }
}

/// The network's shape and optimizer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MlpConfig {
    /// Features per sample (2 for the lesson's data).
    pub inputs: u64,
    /// Width of every hidden layer.
    pub hidden: u64,
    /// Number of hidden layers.
    pub layers: u64,
    /// Output classes (2).
    pub classes: u64,
    pub optimizer: Optimizer,
}

impl MlpConfig {
    /// The lesson's network: 2 features, one hidden layer of `hidden`, 2 classes, SGD 0.001.
    pub fn lesson(hidden: u64) -> MlpConfig {
        MlpConfig {
            inputs: FEATURES,
            hidden,
            layers: 1,
            classes: CLASSES,
            optimizer: Optimizer::LESSON,
        }
    }

    pub fn with_layers(mut self, layers: u64) -> Self {
        self.layers = layers;
        self
    }

    pub fn with_optimizer(mut self, optimizer: Optimizer) -> Self {
        self.optimizer = optimizer;
        self
    }

    /// Refuses shapes and settings that cannot be trained, with a message that says why.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Invalid(m));
        if self.layers == 0 {
            return bad("the network needs at least 1 hidden layer, got 0".into());
        }
        if self.layers > MAX_LAYERS {
            return bad(format!(
                "at most {MAX_LAYERS} hidden layers are supported, got {}",
                self.layers
            ));
        }
        if self.hidden == 0 {
            return bad("hidden layers need at least 1 neuron, got a width of 0".into());
        }
        if self.inputs == 0 || self.classes < 2 {
            return bad(format!(
                "need at least 1 input and 2 classes, got {} and {}",
                self.inputs, self.classes
            ));
        }
        let lr = self.optimizer.lr();
        if !(lr.is_finite() && lr > 0.0) {
            return bad(format!(
                "the learning rate must be a finite positive number, got {lr}"
            ));
        }
        if let Optimizer::Adam {
            beta1, beta2, eps, ..
        } = self.optimizer
        {
            if !((0.0..1.0).contains(&beta1)
                && (0.0..1.0).contains(&beta2)
                && eps.is_finite()
                && eps > 0.0)
            {
                return bad(format!(
                    "Adam needs betas in [0, 1) and eps > 0, got {beta1}, {beta2}, {eps}"
                ));
            }
        }
        self.checked_parameter_count().map(|_| ())
    }

    /// `(fan_in, fan_out)` of every dense layer, input to output.
    pub fn layer_shapes(&self) -> Vec<(u64, u64)> {
        let mut shapes = vec![(self.inputs, self.hidden)];
        shapes.extend((1..self.layers).map(|_| (self.hidden, self.hidden)));
        shapes.push((self.hidden, self.classes));
        shapes
    }

    /// Weights and biases: `Σ (fan_in + 1) · fan_out`, or an error on overflow.
    pub fn checked_parameter_count(&self) -> Result<u64, Error> {
        let overflow = || {
            Error::Invalid(format!(
                "{} hidden layers of width {} have more parameters than 64 bits can count",
                self.layers, self.hidden
            ))
        };
        let per_hidden = self
            .hidden
            .checked_add(1)
            .and_then(|h| h.checked_mul(self.hidden))
            .ok_or_else(overflow)?;
        let first = (self.inputs + 1)
            .checked_mul(self.hidden)
            .ok_or_else(overflow)?;
        let last = self
            .hidden
            .checked_add(1)
            .and_then(|h| h.checked_mul(self.classes))
            .ok_or_else(overflow)?;
        per_hidden
            .checked_mul(self.layers - 1)
            .and_then(|v| v.checked_add(first))
            .and_then(|v| v.checked_add(last))
            // Every parameter is 4 bytes, with gradients and state several times over.
            .filter(|&n| n.checked_mul(16).is_some())
            .ok_or_else(overflow)
    }

    /// Weights and biases (the configuration must be valid).
    pub fn parameter_count(&self) -> u64 {
        self.checked_parameter_count().unwrap_or(u64::MAX)
    }
}
