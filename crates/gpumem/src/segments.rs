//! The segments of each backing — host memory on `cpu`, wgpu buffers on `wgpu`, none on
//! `plan` — as the caching allocator asks for them: memory only, and the opening of the
//! backing a user names (`open`). What runs on them is the executor's (`exec`), kernels and
//! their caches included; the device owns one of each and matches neither's variants.

mod backing;
#[cfg(feature = "wgpu")]
mod buffers;
mod driver;
mod host;
mod open;

pub use backing::Backing;
#[cfg(feature = "wgpu")]
pub use buffers::BufferStore;
#[cfg(feature = "wgpu")]
pub(crate) use buffers::parts;
pub use driver::DriverMemory;
pub use host::HostStore;
pub(crate) use open::open;
