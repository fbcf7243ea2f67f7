//! The card's settings every program that emulates a card takes — the demos (through
//! [`crate::DeviceArgs`]) and `memviz replay` — parsed by gpumem's types and checked by its
//! rules, so both programs read a flag the same way.

use crate::AllocatorArgs;
use clap::Args;
use gpumem::versions::{ComputeCapability, DEFAULT_COMPUTE_CAPABILITY, TorchVersion};

/// The PyTorch to follow, the card's compute capability, what it holds outside the
/// allocator, and the allocator's settings.
#[derive(Debug, Clone, Args)]
pub struct CardArgs {
    /// Memory on the card that the allocator does not hold: the CUDA context and other
    /// processes. It lowers the "free" figure as a driver's would; the book's Monitoring page
    /// derives the lesson's from its message. A size [default: the card's: 0 on ideal or a
    /// card given by size, 0.72 GiB on lesson].
    #[arg(long, value_name = "SIZE", value_parser = parse_context_memory, allow_hyphen_values = true)]
    pub context_memory: Option<u64>,

    /// Follow this PyTorch (`torch.__version__`, e.g. 2.11): the out-of-memory error's words,
    /// the cuBLAS and cuBLASLt workspaces (where from, how large), and in the demos what
    /// zero_grad() does and foreach or for-loop optimizers. A version between two the program
    /// knows takes the earlier one's rules [default: the card's: none on ideal, 1.12 on lesson;
    /// memviz replay on a card given by size: the recording's].
    #[arg(long, value_name = "VERSION")]
    pub torch: Option<TorchVersion>,

    /// The card's compute capability (torch.cuda.get_device_capability()), for the
    /// workspaces' sizes under --torch: 9.0 and newer get larger ones in some versions
    /// [default: 7.0; memviz replay of a recording: the card it was recorded for].
    #[arg(long, value_name = "X.Y")]
    pub compute_capability: Option<ComputeCapability>,

    /// The caching allocator's settings (PyTorch's PYTORCH_CUDA_ALLOC_CONF and friends).
    #[command(flatten)]
    pub allocator: AllocatorArgs,
}

impl CardArgs {
    /// The compute capability asked, or the programs' default.
    pub fn capability(&self) -> ComputeCapability {
        self.compute_capability
            .unwrap_or(DEFAULT_COMPUTE_CAPABILITY)
    }
}

/// A size; whether it fits the card is checked when the device opens.
pub(crate) use gpumem::parse::size as parse_context_memory;
