//! gpumem: a small neural-network training engine that accounts for every byte of device
//! memory the way PyTorch's caching allocator does.

pub mod alloc;
pub mod data;
pub mod device;
pub mod estimate;
pub mod exec;
pub mod fit;
pub mod lesson;
pub mod measure;
pub mod mlp;
pub mod report;
pub mod size;
pub mod tensor;
pub mod testing;
pub mod train;

pub use device::{Backend, Device, DeviceOptions, Error};
pub use size::{Bytes, MemorySpec};
pub use tensor::{DType, Tensor};
