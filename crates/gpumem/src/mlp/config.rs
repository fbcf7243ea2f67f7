//! What network to build and how to train it, checked before anything is allocated.

use crate::data::{CLASSES, FEATURES};
use crate::error::Error;
use crate::tensor::DType;
use std::fmt;

/// The deepest network the engine builds (one allocation per tensor: far deeper would take
/// minutes just to plan, and no card holds it at any useful width).
pub const MAX_LAYERS: u64 = 100_000;

/// The optimizer and its settings.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "name")]
pub enum Optimizer {
    /// Stochastic gradient descent; with momentum, one buffer per parameter (PyTorch's
    /// `momentum_buffer`, a clone of the first gradient).
    Sgd {
        lr: f32,
        #[serde(default)]
        momentum: f32,
    },
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
    pub const LESSON: Optimizer = Optimizer::Sgd {
        lr: 0.001,
        momentum: 0.0,
    };

    /// SGD without momentum.
    pub fn sgd(lr: f32) -> Optimizer {
        Optimizer::Sgd { lr, momentum: 0.0 }
    }

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
            Optimizer::Sgd { lr, .. } | Optimizer::Adam { lr, .. } => lr,
        }
    }

    /// Values of optimizer state kept per parameter.
    pub fn states_per_parameter(&self) -> u64 {
        match *self {
            Optimizer::Sgd { momentum, .. } => u64::from(momentum != 0.0),
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
        match *self {
            Optimizer::Sgd { momentum, .. } if momentum != 0.0 => {
                write!(f, "sgd (lr {}, momentum {momentum})", self.lr())
            }
            _ => write!(f, "{} (lr {})", self.name(), self.lr()),
        }
    }
}

// ANCHOR: precision
/// What the numbers are stored as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// Everything float32.
    #[default]
    Float32,
    /// Mixed precision as `torch.autocast(dtype=torch.float16)` and `GradScaler` run it:
    /// the matrix products take float16 copies of the weights (autocast's cast cache, kept
    /// for the backward pass) and of the input, the activations and their gradients are
    /// float16 (half the bytes); the weights, their gradients and the optimizer's state stay
    /// float32 ("master weights"); the loss is computed in float32 and scaled so that small
    /// gradients survive in float16.
    Mixed,
    /// Everything float64, as numpy loads data by default: twice the bytes of float32.
    Float64,
}
// ANCHOR_END: precision

impl Precision {
    /// Parameters, gradients and optimizer state.
    pub fn parameters(self) -> DType {
        if self == Precision::Float64 {
            DType::F64
        } else {
            DType::F32
        }
    }

    /// Hidden activations, the values before the ReLU, and their gradients.
    pub fn activations(self) -> DType {
        match self {
            Precision::Float32 => DType::F32,
            Precision::Mixed => DType::F16,
            Precision::Float64 => DType::F64,
        }
    }

    /// The input batch, the logits and the loss terms.
    pub fn data(self) -> DType {
        self.parameters()
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Precision::Float32 => "float32",
            Precision::Mixed => "mixed (autocast float16)",
            Precision::Float64 => "float64",
        })
    }
}

/// Which hidden activations a step keeps for its backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "layers")]
pub enum Checkpointing {
    /// Keep every activation (no recomputation).
    #[default]
    Off,
    /// Cut the hidden layers into segments of this many layers; keep only each segment's
    /// output and recompute the inside of a segment during the backward pass.
    Every(u64),
    /// Segments of ⌈√L⌉ layers: about √L kept activations and one extra forward pass.
    Sqrt,
    /// Segments of this many layers, the last one checkpointed too (`checkpoint` around
    /// every segment, where `checkpoint_sequential` leaves the last one alone).
    Each(u64),
}

impl Checkpointing {
    /// The segment length for `layers` hidden layers (`layers` itself when off).
    pub fn segment(self, layers: u64) -> u64 {
        match self {
            Checkpointing::Off => layers,
            Checkpointing::Every(k) | Checkpointing::Each(k) => k.clamp(1, layers.max(1)),
            Checkpointing::Sqrt => (layers as f64).sqrt().ceil().max(1.0) as u64,
        }
    }
}

/// How the optimizer's update runs, with PyTorch's names: what it costs in memory differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimizerImpl {
    /// `foreach=True`, PyTorch's default for CUDA tensors: one operation over all parameters
    /// at a time; Adam's square roots are temporaries as large as all parameters together.
    #[default]
    Foreach,
    /// `foreach=False`: parameter by parameter; Adam's temporaries are one parameter's size.
    ForLoop,
    /// `fused=True`: one kernel per update, no temporaries (Adam's step counts live on the
    /// device).
    Fused,
}

/// How `foreach` Adam (`_multi_tensor_adam`) makes its denominator `sqrt(v̂) + eps`, which
/// decides how many parameter-sized temporaries the update holds at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForeachDenom {
    /// PyTorch 2.1 and later: `_foreach_add_` adds `eps` into `exp_avg_sq_sqrt` in place, so
    /// the square roots are the one temporary (pytorch#97712).
    #[default]
    InPlace,
    /// PyTorch 2.0: `denom = torch._foreach_add(exp_avg_sq_sqrt, eps)` makes a second list
    /// beside the square roots; both live until `_multi_tensor_adam` returns.
    OutOfPlace,
}

impl ForeachDenom {
    fn is_default(&self) -> bool {
        *self == ForeachDenom::default()
    }
}

/// What `optimizer.zero_grad()` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroGrad {
    /// `set_to_none=True`, the default since PyTorch 2.0: gradients are freed, and the next
    /// backward pass allocates them again.
    #[default]
    SetToNone,
    /// `set_to_none=False` (the default before 2.0, as in the lesson): gradients stay
    /// allocated and are filled with zeros; the backward pass adds into them.
    Zero,
}

/// How gradient accumulation scales each micro-batch's mean loss before its backward pass,
/// so that the gradients add up to the batch's. Both make the same one-value tensor: the
/// choice changes the update, never the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossWeighting {
    /// `loss / accumulation_steps`, the usual idiom: every micro-batch weighs the same, which
    /// is the batch's mean only when they all have the same number of rows.
    #[default]
    OverSteps,
    /// `loss * len / rows`: each micro-batch weighs its share of the batch's rows, the
    /// batch's mean gradient for any split.
    ByRows,
}

impl LossWeighting {
    /// What micro-batch of `len` rows multiplies its mean loss by, when a batch of `rows`
    /// rows is accumulated over `accumulation` micro-batches.
    pub fn factor(self, rows: u64, accumulation: u64, len: u64) -> f64 {
        match self {
            LossWeighting::OverSteps => 1.0 / accumulation.max(1) as f64,
            LossWeighting::ByRows => len as f64 / rows.max(1) as f64,
        }
    }

    /// The scaled loss's label in traces and snapshots.
    pub fn label(self) -> &'static str {
        match self {
            LossWeighting::OverSteps => "loss / k",
            LossWeighting::ByRows => "loss * len / rows",
        }
    }
}

/// How a step trades memory for time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Strategy {
    pub precision: Precision,
    /// Micro-batches per optimizer step (gradient accumulation); 1 means none.
    pub accumulation: u64,
    pub checkpointing: Checkpointing,
    /// `nn.ReLU(inplace=True)`: the ReLU overwrites its input instead of allocating.
    #[serde(default)]
    pub relu_inplace: bool,
    #[serde(default)]
    pub zero_grad: ZeroGrad,
    #[serde(default)]
    pub optimizer_impl: OptimizerImpl,
    /// With `foreach` Adam: whether its denominator is a second temporary (PyTorch 2.0) or
    /// made in place (2.1 and later); left out of the JSON when in place.
    #[serde(default, skip_serializing_if = "ForeachDenom::is_default")]
    pub foreach_denom: ForeachDenom,
    /// `torch.amp.GradScaler`: `None` uses one exactly with mixed precision (the usual
    /// pairing); `Some` forces it on or off.
    #[serde(default)]
    pub grad_scaler: Option<bool>,
    /// The `GradScaler`'s settings when there is one (PyTorch's defaults unless set; left
    /// out of the JSON then).
    #[serde(default, skip_serializing_if = "GradScalerConfig::is_default")]
    pub scaler: GradScalerConfig,
    /// With accumulation: how each micro-batch's loss is scaled.
    #[serde(default)]
    pub loss_weighting: LossWeighting,
}

impl Strategy {
    /// Whether the loss is scaled by a `GradScaler`.
    pub fn scales_loss(&self) -> bool {
        self.grad_scaler
            .unwrap_or(self.precision == Precision::Mixed)
    }
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy {
            precision: Precision::Float32,
            accumulation: 1,
            checkpointing: Checkpointing::Off,
            relu_inplace: false,
            zero_grad: ZeroGrad::SetToNone,
            optimizer_impl: OptimizerImpl::Foreach,
            foreach_denom: ForeachDenom::InPlace,
            grad_scaler: None,
            scaler: GradScalerConfig::default(),
            loss_weighting: LossWeighting::OverSteps,
        }
    }
}

/// `torch.amp.GradScaler(init_scale=..., growth_interval=...)`, with PyTorch's names. The
/// growth factor (2) and the backoff factor (0.5) are PyTorch's defaults, fixed.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GradScalerConfig {
    /// The loss scale of the first step (PyTorch's default 2¹⁶ = 65536).
    pub init_scale: f32,
    /// Steps without an overflow after which the scale doubles (PyTorch's default 2000).
    pub growth_interval: u32,
}

// `validate` refuses a scale that is not a finite positive number, so no NaN is compared.
impl Eq for GradScalerConfig {}

impl GradScalerConfig {
    /// `torch.amp.GradScaler()`'s `init_scale`.
    pub const INIT_SCALE: f32 = 65536.0;
    /// `torch.amp.GradScaler()`'s `growth_interval`.
    pub const GROWTH_INTERVAL: u32 = 2000;

    /// A scaler that starts at `init_scale` and doubles it after `growth_interval` steps
    /// without an overflow.
    pub fn new(init_scale: f32, growth_interval: u32) -> Self {
        GradScalerConfig {
            init_scale,
            growth_interval,
        }
    }

    /// Whether these are PyTorch's defaults.
    pub fn is_default(&self) -> bool {
        *self == GradScalerConfig::default()
    }
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        GradScalerConfig::new(Self::INIT_SCALE, Self::GROWTH_INTERVAL)
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
    /// Precision, gradient accumulation, activation checkpointing.
    #[serde(default)]
    pub strategy: Strategy,
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
            strategy: Strategy::default(),
        }
    }

    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
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
        let bad = |m: String| Err(Error::Setup(m));
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
        if let Optimizer::Sgd { momentum, .. } = self.optimizer
            && !(momentum.is_finite() && momentum >= 0.0)
        {
            return bad(format!(
                "SGD's momentum must be a finite number of at least 0, got {momentum}"
            ));
        }
        if let Optimizer::Adam {
            beta1, beta2, eps, ..
        } = self.optimizer
            && !((0.0..1.0).contains(&beta1)
                && (0.0..1.0).contains(&beta2)
                && eps.is_finite()
                && eps > 0.0)
        {
            return bad(format!(
                "Adam needs betas in [0, 1) and eps > 0, got {beta1}, {beta2}, {eps}"
            ));
        }
        if self.strategy.accumulation == 0 {
            return bad(
                "gradient accumulation needs at least 1 micro-batch per step, got 0".into(),
            );
        }
        let GradScalerConfig {
            init_scale,
            growth_interval,
        } = self.strategy.scaler;
        if !(init_scale.is_finite() && init_scale > 0.0) {
            return bad(format!(
                "the GradScaler's init_scale must be a finite positive number, got {init_scale}"
            ));
        }
        if growth_interval == 0 {
            return bad("the GradScaler's growth_interval must be at least 1, got 0".into());
        }
        if matches!(
            self.strategy.checkpointing,
            Checkpointing::Every(0) | Checkpointing::Each(0)
        ) {
            return bad("checkpoint segments need at least 1 layer, got 0".into());
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
            Error::Setup(format!(
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
