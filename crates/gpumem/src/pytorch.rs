//! PyTorch's own figures for the training step: the fixture that
//! `reference/pytorch/step_peaks.py` writes (MemTracker's peak of raw tensor bytes over two
//! steps of the lesson's loop), read into the engine's terms.

use crate::mlp::{
    Checkpointing, LossWeighting, MlpConfig, Optimizer, OptimizerImpl, Precision, Strategy,
    ZeroGrad,
};
use serde::Deserialize;

/// The committed fixture, next to the tests that read it.
pub const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pytorch_step_peaks.json"
);

/// The fixture file.
#[derive(Debug, Deserialize)]
pub struct Fixture {
    pub torch_version: String,
    pub command: String,
    pub setups: Vec<Setup>,
}

/// One setup PyTorch ran and its peak.
#[derive(Debug, Deserialize)]
pub struct Setup {
    pub name: String,
    pub inputs: u64,
    pub width: u64,
    pub layers: u64,
    pub classes: u64,
    pub batch: u64,
    pub optimizer: SetupOptimizer,
    pub strategy: SetupStrategy,
    /// The largest total of live tensor bytes over the two steps.
    pub peak_bytes: u64,
}

/// The optimizer's settings as the script records them.
#[derive(Debug, Deserialize)]
pub struct SetupOptimizer {
    pub name: String,
    pub lr: f32,
    #[serde(default)]
    pub momentum: f32,
    #[serde(default)]
    pub betas: Option<(f32, f32)>,
    #[serde(default)]
    pub eps: Option<f32>,
    pub foreach: bool,
    pub fused: bool,
}

/// The strategy's settings as the script records them.
#[derive(Debug, Deserialize)]
pub struct SetupStrategy {
    pub autocast: Option<String>,
    pub autocast_loss: Option<String>,
    pub grad_scaler: bool,
    pub accumulation: u64,
    pub checkpoint_segment: u64,
    pub checkpoint_last_segment: bool,
    pub relu_inplace: bool,
    pub zero_grad_set_to_none: bool,
}

/// The committed per-card fixture (`reference/pytorch/parallel_peaks.py`).
pub const PARALLEL_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pytorch_parallel_peaks.json"
);

/// The committed per-stage fixture of the pipeline schedules
/// (`reference/pytorch/pipeline_peaks.py`), in the per-card fixture's layout.
pub const PIPELINE_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pytorch_pipeline_peaks.json"
);

/// The per-card fixture file: one card (`rank`) of a group PyTorch ran on its fake process
/// group.
#[derive(Debug, Deserialize)]
pub struct ParallelFixture {
    pub torch_version: String,
    pub command: String,
    pub setups: Vec<ParallelSetup>,
}

/// One card of one scheme and its peaks.
#[derive(Debug, Deserialize)]
pub struct ParallelSetup {
    pub name: String,
    /// `ddp`, `ddp_view`, `fsdp`, `fsdp_no_reshard`, `zero1`, `pipeline_gpipe` or
    /// `pipeline_1f1b`.
    pub scheme: String,
    pub world_size: usize,
    pub rank: usize,
    /// Rows this card trained on (data-parallel schemes; a pipeline's every stage sees the
    /// whole batch).
    #[serde(default)]
    pub rows_on_rank: Option<u64>,
    pub inputs: u64,
    pub width: u64,
    pub layers: u64,
    pub classes: u64,
    /// The global batch, split over the cards.
    pub batch: u64,
    pub optimizer: SetupOptimizer,
    /// The lesson's plain step when the fixture does not say (the pipeline fixture).
    #[serde(default)]
    pub strategy: SetupStrategy,
    /// The largest total of live tensor bytes on this card over the two steps.
    pub peak_run_bytes: u64,
    /// The largest while the model, wrapper and optimizer were built.
    pub construct_peak_bytes: u64,
    /// A pipeline's micro-batches per step.
    #[serde(default)]
    pub micro_batches: Option<u64>,
}

/// Reads and parses a fixture at `path`.
fn load<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

impl Default for SetupStrategy {
    /// The lesson's loop: float32, one micro-batch, no checkpointing, `zero_grad()` setting
    /// the gradients to none.
    fn default() -> Self {
        SetupStrategy {
            autocast: None,
            autocast_loss: None,
            grad_scaler: false,
            accumulation: 1,
            checkpoint_segment: 0,
            checkpoint_last_segment: false,
            relu_inplace: false,
            zero_grad_set_to_none: true,
        }
    }
}

impl Fixture {
    /// Reads and parses the fixture at `path`.
    pub fn load(path: &std::path::Path) -> Result<Fixture, String> {
        load(path)
    }
}

impl ParallelFixture {
    /// Reads and parses the per-card fixture at `path`.
    pub fn load(path: &std::path::Path) -> Result<ParallelFixture, String> {
        load(path)
    }
}

impl ParallelSetup {
    /// The engine's configuration for the network every card trains.
    pub fn config(&self) -> Result<MlpConfig, String> {
        let net = (self.inputs, self.width, self.layers, self.classes);
        config_of(net, &self.optimizer, &self.strategy)
    }
}

impl Setup {
    /// The engine's configuration for this setup, or why the engine has none: the settings
    /// it does not express.
    pub fn config(&self) -> Result<MlpConfig, String> {
        let net = (self.inputs, self.width, self.layers, self.classes);
        config_of(net, &self.optimizer, &self.strategy)
    }
}

/// The engine's configuration for a network `(inputs, width, layers, classes)` trained as the
/// script records it.
fn config_of(
    (inputs, hidden, layers, classes): (u64, u64, u64, u64),
    o: &SetupOptimizer,
    s: &SetupStrategy,
) -> Result<MlpConfig, String> {
    let optimizer = match o.name.as_str() {
        "sgd" => Optimizer::Sgd {
            lr: o.lr,
            momentum: o.momentum,
        },
        "adam" => {
            let (beta1, beta2) = o.betas.unwrap_or((0.9, 0.999));
            Optimizer::Adam {
                lr: o.lr,
                beta1,
                beta2,
                eps: o.eps.unwrap_or(1e-8),
            }
        }
        other => return Err(format!("optimizer {other:?}")),
    };
    let precision = match (s.autocast.as_deref(), s.autocast_loss.as_deref()) {
        (None, _) => Precision::Float32,
        // The engine's mixed precision is CUDA's autocast float16, loss policy included.
        (Some("float16"), Some("cuda")) => Precision::Mixed,
        (Some(a), l) => {
            return Err(format!(
                "autocast {a} with {} autocast's loss policy (the engine follows CUDA's)",
                l.unwrap_or("cpu")
            ));
        }
    };
    let checkpointing = match (s.checkpoint_segment, s.checkpoint_last_segment) {
        (0, _) => Checkpointing::Off,
        (k, false) => Checkpointing::Every(k),
        (k, true) => Checkpointing::Each(k),
    };
    let optimizer_impl = match (o.foreach, o.fused) {
        (_, true) => OptimizerImpl::Fused,
        (true, false) => OptimizerImpl::Foreach,
        (false, false) => OptimizerImpl::ForLoop,
    };
    Ok(MlpConfig {
        inputs,
        hidden,
        layers,
        classes,
        optimizer,
        strategy: Strategy {
            precision,
            accumulation: s.accumulation,
            checkpointing,
            relu_inplace: s.relu_inplace,
            zero_grad: if s.zero_grad_set_to_none {
                ZeroGrad::SetToNone
            } else {
                ZeroGrad::Zero
            },
            optimizer_impl,
            // The fixture's PyTorch (2.15) adds Adam's `eps` in place.
            foreach_denom: Default::default(),
            grad_scaler: Some(s.grad_scaler),
            // PyTorch's defaults, as the fixture's `GradScaler("cpu")`.
            scaler: Default::default(),
            // The fixture's loop divides each micro-batch's loss by k.
            loss_weighting: LossWeighting::OverSteps,
        },
    })
}
