//! gpumem: a small neural-network training engine that accounts for every byte of device
//! memory the way PyTorch's caching allocator does.

pub mod alloc;
pub mod size;
