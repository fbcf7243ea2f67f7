//! Running work on a backing: the operations of a training step, and moving data in and out.

#[cfg(feature = "cpu")]
mod compute;
#[cfg(feature = "cpu")]
mod cpu;
#[cfg(all(feature = "cpu", any(test, feature = "testing")))]
pub use cpu::bandwidth;
#[cfg(feature = "wgpu")]
mod gpu;
pub mod ops;
mod spec;
