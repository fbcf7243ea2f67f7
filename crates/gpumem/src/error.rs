//! The engine's one error type. Each variant is a kind of failure a caller may act on
//! differently: out of memory (a result to report), a setting to change, an adapter that
//! cannot run something, a bug in how tensors were combined. Messages name settings, never a
//! command-line flag: a CLI that knows its flags adds them (see `cli::run_main`).

use crate::alloc::{ConfigError, OutOfMemory};

/// Everything that can go wrong on a device or in a step. Nothing in the engine panics on
/// these.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The allocator could not serve a request: the setup does not fit the card.
    #[error("{0}")]
    OutOfMemory(Box<OutOfMemory>),
    /// The device failed (lost, or a driver error); retrying will not help.
    #[error("the device failed: {0}")]
    Device(String),
    /// The wgpu backing was asked for and no adapter could be opened.
    #[error("{0}")]
    NoAdapter(String),
    /// A backing this build of the crate left out (the planner, built without the `wgpu`
    /// or `cpu` feature, has only `plan`).
    #[error("this build of gpumem has no {0} backing: enable the `{0}` feature")]
    NotBuilt(crate::backend::Backend),
    /// Allocator settings that are out of range.
    #[error("invalid allocator setting: {0}")]
    Config(#[from] ConfigError),
    /// The plan backing was given no capacity: it has no memory of its own to measure.
    #[error("the plan backing has no memory of its own: give the device memory as a size")]
    PlanNeedsCapacity,
    /// What the plan backing cannot do: hold data, or train (it runs no kernels).
    #[error("{0}")]
    Plan(String),
    /// What this wgpu adapter cannot run (float64 without `SHADER_F64`): a setup to change.
    #[error(
        "not supported by the wgpu backing on this adapter: {0}; use float32 or mixed \
         precision, or the cpu backing"
    )]
    Unsupported(String),
    /// Settings that cannot be trained: the network's shape, the optimizer, the batch size,
    /// the loss scale, an empty data set, or sizes whose bytes do not fit in 64 bits.
    #[error("{0}")]
    Setup(String),
    /// Tensors or a batch that do not fit an operation (shapes, element types, devices,
    /// labels out of range): a bug in the caller, not a setting.
    #[error("{0}")]
    Shape(String),
}

impl Error {
    pub fn as_oom(&self) -> Option<&OutOfMemory> {
        match self {
            Error::OutOfMemory(o) => Some(o),
            _ => None,
        }
    }
}
