//! gpumem: a small neural-network training engine that accounts for every byte of device
//! memory the way PyTorch's caching allocator does.
//!
//! The backings that run kernels are cargo features, both on by default: `wgpu` and `cpu`.
//! Without them the crate is the planner (the `plan` backing and everything that measures on
//! it), which builds for `wasm32-unknown-unknown`; opening a backing left out is
//! [`Error::NotBuilt`].

pub mod alloc;
pub mod alloc_conf;
mod backend;
pub mod cublas;
pub mod data;
pub mod device;
mod dtype;
mod error;
pub mod estimate;
mod exec;
pub mod fit;
pub mod lesson;
pub mod measure;
pub mod mlp;
mod ops;
pub mod parallel;
pub mod parse;
pub mod pytorch;
pub mod report;
pub mod role;
pub mod search;
mod segments;
pub mod size;
pub mod snapshot;
pub mod tensor;
#[cfg(all(feature = "wgpu", any(test, feature = "testing")))]
pub mod testing;
pub mod train;
pub mod versions;

pub use device::{Backend, Device, DeviceOptions};
pub use error::Error;
/// The cpu backing's elementwise kernels against a plain copy, for the throughput bench.
#[cfg(all(feature = "cpu", any(test, feature = "testing")))]
pub mod cpu_bandwidth;
pub use role::Role;
pub use size::{Bytes, MemorySpec};
pub use tensor::{DType, Tensor};
