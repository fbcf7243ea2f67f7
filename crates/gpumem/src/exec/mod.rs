//! Running work on a backing: the operations of a training step ([`ops`], each declared
//! once as an [`op::Op`]) and the executor that runs them beside the allocator.

#[cfg(feature = "cpu")]
mod compute;
#[cfg(feature = "cpu")]
mod cpu;
#[cfg(all(feature = "cpu", any(test, feature = "testing")))]
pub use cpu::bandwidth;
pub(crate) mod executor;
mod fusion;
#[cfg(feature = "wgpu")]
pub(crate) mod gpu;
pub(crate) mod op;
pub mod ops;
mod spec;
