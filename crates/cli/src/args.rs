//! Flags every challenge takes. Each challenge flattens these into its own `clap` parser
//! and may change the defaults with [`with_defaults`].

use crate::setup::ModelSetup;
use clap::Args;
use gpumem::alloc::OomMessage;
use gpumem::cublas::{CublasWorkspace, WorkspaceRules};
use gpumem::device::{Backend, DeviceOptions};
use gpumem::estimate::StepSetup;
use gpumem::lesson::Card;
use gpumem::mlp::{MlpConfig, Optimizer, OptimizerImpl, ZeroGrad};
use gpumem::size::MemorySpec;
use gpumem::train::BatchSize;
use gpumem::versions::{DEFAULT_COMPUTE_CAPABILITY, Rules};
use std::num::NonZeroU64;

/// Where to run and how much memory the card has.
#[derive(Debug, Clone, Args)]
pub struct DeviceArgs {
    /// Memory of the card: a size (`16GiB`, `512MB`, `1e9`) or `native` for what the
    /// backing really has. The default is the 15.90 GiB the lesson's card reports; on the
    /// default --card ideal all of it is for tensors (--card lesson keeps 0.72 GiB of it
    /// outside the allocator).
    #[arg(long, value_name = "SIZE", default_value = gpumem::lesson::CARD_ARG, value_parser = parse_memory)]
    pub device_memory: MemorySpec,

    /// auto: a hardware GPU through wgpu if there is one, else the cpu backing. wgpu: any
    /// wgpu adapter (lavapipe on machines without a GPU). cpu: host memory and plain Rust
    /// kernels. plan: allocate everything, run nothing.
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,

    /// Which card: ideal (its memory all for tensors, what the memory equation counts, with
    /// PyTorch 2's zero_grad and foreach) or lesson (the lesson's card as its message shows
    /// it: 0.72 GiB outside the allocator, and the lesson's PyTorch, 1.12: gradients zeroed,
    /// optimizers looping per parameter, no workspace in the allocator). The flags below
    /// change either.
    #[arg(long, value_name = "CARD", default_value = "ideal")]
    pub card: Card,

    /// Each thread's cuBLAS workspace, taken through the caching allocator by its first
    /// matrix product: a size (`8MiB`), CUBLAS_WORKSPACE_CONFIG's `:SIZE_KiB:COUNT` pairs
    /// (`:4096:2:16:8`, PyTorch's default before Hopper), or `off` for no workspaces at all
    /// [default: the card's, none on ideal].
    #[arg(long, value_name = "SIZE|:S:C|off", value_parser = parse_cublas_workspace, allow_hyphen_values = true)]
    pub cublas_workspace: Option<CublasWorkspace>,

    /// Wording of out-of-memory errors: lesson (PyTorch up to 2.0, as the lesson quotes it) or
    /// current (PyTorch 2.1 and later) [default: --torch's, else lesson].
    #[arg(long, value_name = "FORM", value_parser = parse_oom_message)]
    pub oom_message: Option<OomMessage>,

    /// What the demos share with `memviz replay`: the version, the memory outside the
    /// allocator, the allocator's settings.
    #[command(flatten)]
    pub settings: crate::CardArgs,
}

impl DeviceArgs {
    pub fn options(&self, backend: Backend) -> DeviceOptions {
        DeviceOptions {
            backend,
            memory: self.device_memory,
            allocator: gpumem::alloc::AllocatorConfig {
                context_memory: self.settings.context_memory.unwrap_or(self.card.outside()),
                ..self.settings.allocator.config()
            },
            oom_message: self.oom_message(),
            cublas: self.workspaces(),
            max_split_rule: gpumem::versions::max_split_minimum(
                self.torch_rules().map(|r| r.asked),
            ),
            ..Default::default()
        }
    }

    /// The PyTorch whose defaults apply: `--torch`'s, else the card's (none on ideal).
    pub fn torch_rules(&self) -> Option<Rules> {
        self.settings.torch.map(Rules::of).or(self.card.torch())
    }

    /// The message's wording: `--oom-message`, else the version's, else the lesson's.
    fn oom_message(&self) -> OomMessage {
        self.oom_message
            .or(self.torch_rules().map(|r| r.release.oom_message))
            .unwrap_or_default()
    }

    /// The `card:` line the demos print: which card, and what the flags changed of it.
    pub fn card_line(&self) -> String {
        use gpumem::size::format_bytes;
        let mut changed = Vec::new();
        if self.device_memory != gpumem::MemorySpec::Bytes(self.card.capacity()) {
            changed.push(format!(
                "{} of memory (--device-memory)",
                self.device_memory
            ));
        }
        if let Some(c) = self
            .settings
            .context_memory
            .filter(|&c| c != self.card.outside())
        {
            changed.push(format!(
                "{} outside the allocator (--context-memory)",
                format_bytes(c)
            ));
        }
        match self.cublas_workspace {
            Some(CublasWorkspace::Off) => {
                changed.push("no workspaces (--cublas-workspace off)".into())
            }
            Some(CublasWorkspace::Bytes(b)) => changed.push(format!(
                "a cuBLAS workspace of {} per thread (--cublas-workspace)",
                format_bytes(b)
            )),
            None => {}
        }
        if let Some(r) = self.settings.torch.map(Rules::of) {
            changed.push(format!("{} (--torch)", r.describe()));
            changed.extend(r.note());
        }
        if self.settings.capability() != DEFAULT_COMPUTE_CAPABILITY {
            changed.push(format!(
                "compute capability {} (--compute-capability)",
                self.settings.capability()
            ));
        }
        let mut line = format!("card:    {}", self.card.describe());
        if !changed.is_empty() {
            line += &format!("; changed: {}", changed.join(", "));
        }
        line
    }

    /// The workspaces the matrix products take: the version's (`--torch`, at
    /// `--compute-capability`) or the card's, changed by `--cublas-workspace`.
    pub fn workspaces(&self) -> WorkspaceRules {
        let base = match self.settings.torch {
            Some(v) => Rules::of(v).workspaces(self.settings.capability()),
            None => self.card.workspaces(),
        };
        self.cublas_workspace.map_or(base, |w| base.with_cublas(w))
    }
}

/// The network, the data and the training settings.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Width of every hidden layer.
    #[arg(long, value_name = "N", default_value = "2000", value_parser = parse_positive, allow_hyphen_values = true)]
    pub hidden: u64,

    /// Number of hidden layers.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_positive, allow_hyphen_values = true)]
    pub layers: u64,

    /// Rows per mini-batch, or `full` for the whole training set as one batch.
    #[arg(long, value_name = "ROWS|full", default_value = "32", value_parser = parse_batch, allow_hyphen_values = true)]
    pub batch: BatchSize,

    /// Events in the synthetic training set (the lesson's set had about 1.17 million).
    #[arg(long, value_name = "N", default_value = "1173000", value_parser = parse_count, allow_hyphen_values = true)]
    pub samples: NonZeroU64,

    /// Optimizer: sgd (no state) or adam (two values of state per parameter).
    #[arg(long, value_name = "NAME", default_value = "sgd", value_parser = ["sgd", "adam"])]
    pub optimizer: String,

    /// Learning rate.
    #[arg(long, value_name = "RATE", default_value = "0.001", value_parser = parse_lr, allow_hyphen_values = true)]
    pub lr: f32,

    /// SGD's momentum (0: none; otherwise one buffer per parameter).
    #[arg(long, value_name = "M", default_value = "0", value_parser = parse_momentum, allow_hyphen_values = true)]
    pub momentum: f32,

    /// How the optimizer runs, with PyTorch's names: foreach (PyTorch 2's default on CUDA),
    /// for-loop (`foreach=False`, the default before 2.0) or fused (`fused=True`)
    /// [default: the PyTorch version's (--torch, --card), else foreach].
    #[arg(long, value_name = "IMPL", value_parser = parse_optimizer_impl)]
    pub optimizer_impl: Option<OptimizerImpl>,

    /// What `optimizer.zero_grad()` does: none (free the gradients, PyTorch 2's default) or
    /// zero (keep them and fill them with zeros, the default before 2.0)
    /// [default: the PyTorch version's (--torch, --card), else none].
    #[arg(long, value_name = "HOW", value_parser = parse_zero_grad)]
    pub zero_grad: Option<ZeroGrad>,

    /// `nn.ReLU(inplace=True)`: the ReLU overwrites its input.
    #[arg(long)]
    pub relu_inplace: bool,

    /// Seed for the data, the initial weights and the shuffling.
    #[arg(long, value_name = "N", default_value = "0")]
    pub seed: u64,
}

impl ModelArgs {
    pub fn optimizer(&self) -> Optimizer {
        match self.optimizer.as_str() {
            "adam" => Optimizer::adam(self.lr),
            _ => Optimizer::Sgd {
                lr: self.lr,
                momentum: self.momentum,
            },
        }
    }

    /// The network and its training as `device`'s PyTorch runs it: the flags, else the
    /// version's defaults (`--torch`, the card's), else PyTorch 2's.
    pub fn config(&self, device: &DeviceArgs) -> MlpConfig {
        let rules = device.torch_rules().map(|r| r.release);
        let mut config = MlpConfig::lesson(self.hidden)
            .with_layers(self.layers)
            .with_optimizer(self.optimizer());
        config.strategy.optimizer_impl = self
            .optimizer_impl
            .or(rules.map(|r| r.optimizer_impl))
            .unwrap_or_default();
        config.strategy.zero_grad = self
            .zero_grad
            .or(rules.map(|r| r.zero_grad))
            .unwrap_or_default();
        config.strategy.foreach_denom = rules.map(|r| r.foreach_denom).unwrap_or_default();
        config.strategy.relu_inplace = self.relu_inplace;
        config
    }

    /// The network at its batch, checked once: `--batch` resolved against the training set
    /// (with a notice when it was larger), the network as [`ModelArgs::config`] makes it.
    /// What a demo runs takes this and checks neither again.
    pub fn setup(&self, device: &DeviceArgs) -> Result<ModelSetup, gpumem::Error> {
        let (batch, notice) = self.batch.resolve(self.samples);
        Ok(ModelSetup {
            step: StepSetup::new(self.config(device), batch)?,
            notice,
        })
    }
}

/// Changes the default value of flags by name (`[("hidden", "5000")]`), so challenges can
/// share [`ModelArgs`] and still start from their own setup.
pub fn with_defaults(
    mut cmd: clap::Command,
    defaults: &[(&'static str, &'static str)],
) -> clap::Command {
    for &(name, value) in defaults {
        cmd = cmd.mut_arg(name, |a| a.default_value(value));
    }
    cmd
}

fn parse_memory(s: &str) -> Result<MemorySpec, String> {
    s.parse::<MemorySpec>().map_err(|e| e.to_string())
}

fn parse_cublas_workspace(s: &str) -> Result<CublasWorkspace, String> {
    s.parse::<CublasWorkspace>().map_err(|e| e.to_string())
}

fn parse_oom_message(s: &str) -> Result<OomMessage, String> {
    s.parse()
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
}

fn parse_batch(s: &str) -> Result<BatchSize, String> {
    s.parse()
}

pub use gpumem::parse::{count as parse_count, positive as parse_positive};

fn parse_lr(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!(
            "the learning rate must be a finite positive number, got {v}"
        )),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn parse_momentum(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!(
            "the momentum must be a finite number of at least 0, got {v}"
        )),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

fn parse_optimizer_impl(s: &str) -> Result<OptimizerImpl, String> {
    match s.trim() {
        "foreach" => Ok(OptimizerImpl::Foreach),
        "for-loop" => Ok(OptimizerImpl::ForLoop),
        "fused" => Ok(OptimizerImpl::Fused),
        other => Err(format!(
            "unknown optimizer implementation `{other}` (foreach, for-loop or fused)"
        )),
    }
}

fn parse_zero_grad(s: &str) -> Result<ZeroGrad, String> {
    match s.trim() {
        "none" => Ok(ZeroGrad::SetToNone),
        "zero" => Ok(ZeroGrad::Zero),
        other => Err(format!("unknown zero_grad mode `{other}` (none or zero)")),
    }
}

/// The backing for the expensive part of a demo (full batches, deep networks). With
/// `auto` and no hardware GPU, the cpu backing would fill gigabytes of host memory and
/// run for minutes, so those runs are planned instead — the same allocations, no kernels.
/// Returns the backing and, when it differs from the one asked for, why.
pub fn heavy_backend(
    requested: Backend,
    opened: Backend,
    memory: MemorySpec,
) -> (Backend, Option<String>) {
    match (requested, opened, memory) {
        (Backend::Auto, Backend::Cpu, MemorySpec::Bytes(_)) => (
            Backend::Plan,
            Some(
                "planned (plan backing): no hardware GPU, and the cpu backing would fill \
                 gigabytes of host memory"
                    .into(),
            ),
        ),
        (_, opened, _) => (opened, None),
    }
}

#[cfg(test)]
mod tests;
