//! Flags every challenge takes. Each challenge flattens these into its own `clap` parser
//! and may change the defaults with [`with_defaults`].

use clap::Args;
use gpumem::alloc::OomMessage;
use gpumem::device::{Backend, DeviceOptions};
use gpumem::mlp::{MlpConfig, Optimizer, OptimizerImpl, ZeroGrad};
use gpumem::size::MemorySpec;
use gpumem::train::BatchSize;

/// Where to run and how much memory the card has.
#[derive(Debug, Clone, Args)]
pub struct DeviceArgs {
    /// Memory of the card: a size (`16GiB`, `512MB`, `1e9`) or `native` for what the
    /// backing really has. The default is the lesson's card, which reports 15.90 GiB.
    #[arg(long, value_name = "SIZE", default_value = gpumem::lesson::CARD_ARG, value_parser = parse_memory)]
    pub device_memory: MemorySpec,

    /// auto: a hardware GPU through wgpu if there is one, else the cpu backing. wgpu: any
    /// wgpu adapter (lavapipe on machines without a GPU). cpu: host memory and plain Rust
    /// kernels. plan: allocate everything, run nothing.
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = parse_backend)]
    pub backend: Backend,

    /// Memory on the card that the allocator does not hold: the CUDA context and other
    /// processes. It lowers the "free" figure as a driver's would; the book's Monitoring page
    /// derives the lesson's from its message. A size.
    #[arg(long, value_name = "SIZE", default_value = "0", value_parser = parse_context_memory, allow_hyphen_values = true)]
    pub context_memory: u64,

    /// Wording of out-of-memory errors: lesson (PyTorch up to 2.0, as the lesson quotes it) or
    /// current (today's PyTorch).
    #[arg(long, value_name = "FORM", default_value = "lesson", value_parser = parse_oom_message)]
    pub oom_message: OomMessage,

    /// The caching allocator's settings (PyTorch's PYTORCH_CUDA_ALLOC_CONF and friends).
    #[command(flatten)]
    pub allocator: crate::AllocatorArgs,
}

impl DeviceArgs {
    pub fn options(&self, backend: Backend) -> DeviceOptions {
        DeviceOptions {
            backend,
            memory: self.device_memory,
            allocator: gpumem::alloc::AllocatorConfig {
                context_memory: self.context_memory,
                ..self.allocator.config()
            },
            oom_message: self.oom_message,
            ..Default::default()
        }
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
    #[arg(long, value_name = "N", default_value = "1173000", value_parser = parse_positive, allow_hyphen_values = true)]
    pub samples: u64,

    /// Optimizer: sgd (no state) or adam (two values of state per parameter).
    #[arg(long, value_name = "NAME", default_value = "sgd", value_parser = ["sgd", "adam"])]
    pub optimizer: String,

    /// Learning rate.
    #[arg(long, value_name = "RATE", default_value = "0.001", value_parser = parse_lr, allow_hyphen_values = true)]
    pub lr: f32,

    /// SGD's momentum (0: none; otherwise one buffer per parameter).
    #[arg(long, value_name = "M", default_value = "0", value_parser = parse_momentum, allow_hyphen_values = true)]
    pub momentum: f32,

    /// How the optimizer runs, with PyTorch's names: foreach (PyTorch's default on CUDA),
    /// for-loop (`foreach=False`) or fused (`fused=True`).
    #[arg(long, value_name = "IMPL", default_value = "foreach", value_parser = parse_optimizer_impl)]
    pub optimizer_impl: OptimizerImpl,

    /// What `optimizer.zero_grad()` does: none (free the gradients, PyTorch 2's default) or
    /// zero (keep them and fill them with zeros, the default before 2.0).
    #[arg(long, value_name = "HOW", default_value = "none", value_parser = parse_zero_grad)]
    pub zero_grad: ZeroGrad,

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

    pub fn config(&self) -> MlpConfig {
        let mut config = MlpConfig::lesson(self.hidden)
            .with_layers(self.layers)
            .with_optimizer(self.optimizer());
        config.strategy.optimizer_impl = self.optimizer_impl;
        config.strategy.zero_grad = self.zero_grad;
        config.strategy.relu_inplace = self.relu_inplace;
        config
    }

    /// The batch in rows for the training set.
    pub fn batch_rows(&self) -> (u64, Option<String>) {
        self.batch.resolve(self.samples)
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

/// A size; whether it fits the card is checked when the device opens.
fn parse_context_memory(s: &str) -> Result<u64, String> {
    gpumem::size::parse_bytes(s).map_err(|e| e.to_string())
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

/// A whole number of at least 1, with a message that says so.
pub fn parse_positive(s: &str) -> Result<u64, String> {
    let t = s.trim();
    match t.parse::<u64>() {
        Ok(0) => Err("must be at least 1, got 0".into()),
        Ok(n) => Ok(n),
        Err(_) if t.starts_with('-') => Err(format!("must be at least 1, got {t}")),
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => Err(format!(
            "{t} is too large to count (the limit is {})",
            u64::MAX
        )),
        Err(_) => Err(format!("`{t}` is not a whole number")),
    }
}

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
                "planned on the plan backing: no hardware GPU was found, and the same \
                 allocations on the cpu backing would fill gigabytes of host memory"
                    .into(),
            ),
        ),
        (_, opened, _) => (opened, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_numbers_explain_themselves() {
        assert_eq!(parse_positive("5000"), Ok(5000));
        assert!(parse_positive("0").unwrap_err().contains("at least 1"));
        assert!(parse_positive("-1").unwrap_err().contains("at least 1"));
        assert!(
            parse_positive("99999999999999999999")
                .unwrap_err()
                .contains("too large")
        );
        assert!(
            parse_positive("ten")
                .unwrap_err()
                .contains("not a whole number")
        );
        assert!(parse_lr("0").is_err());
        assert!(parse_lr("nan").is_err());
        assert!(parse_lr("inf").is_err());
        assert_eq!(parse_lr("0.01"), Ok(0.01));
        assert!(parse_momentum("-0.5").unwrap_err().contains("at least 0"));
        assert!(parse_momentum("nan").unwrap_err().contains("finite"));
        assert!(parse_momentum("fast").unwrap_err().contains("not a number"));
        assert_eq!(parse_momentum("0.9"), Ok(0.9));
        let e = parse_optimizer_impl("vectorised").unwrap_err();
        assert!(e.contains("foreach, for-loop or fused"), "{e}");
        assert_eq!(parse_optimizer_impl("fused"), Ok(OptimizerImpl::Fused));
        assert!(
            parse_zero_grad("maybe")
                .unwrap_err()
                .contains("none or zero")
        );
        assert_eq!(parse_zero_grad("zero"), Ok(ZeroGrad::Zero));
        assert_eq!(parse_context_memory("0.72GiB"), Ok(773_094_113));
        assert!(
            parse_context_memory("-1GiB")
                .unwrap_err()
                .contains("cannot be negative")
        );
        let e = parse_oom_message("2.0").unwrap_err();
        assert!(e.contains("lesson") && e.contains("current"), "{e}");
    }

    #[test]
    fn device_flags_reach_the_device_options() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            device: DeviceArgs,
        }
        let parse = |args: &[&str]| {
            let all = std::iter::once("t").chain(args.iter().copied());
            Cli::try_parse_from(all)
                .unwrap()
                .device
                .options(Backend::Plan)
        };
        let o = parse(&["--context-memory", "1GiB", "--oom-message", "current"]);
        assert_eq!(
            (o.allocator.context_memory, o.oom_message),
            (1 << 30, OomMessage::Current)
        );
        let d = parse(&[]);
        assert_eq!(
            (d.allocator.context_memory, d.oom_message),
            (0, OomMessage::Lesson)
        );
    }
}
