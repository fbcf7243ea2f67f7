//! Running work on a backing: the executor that runs each operation of a training step
//! (declared once, as an [`op::Op`]) beside the allocator, and moves data in and out.

#[cfg(feature = "cpu")]
mod compute;
#[cfg(feature = "cpu")]
mod cpu;
#[cfg(all(feature = "cpu", any(test, feature = "testing")))]
pub(crate) use cpu::par;
pub(crate) mod executor;
mod fusion;
#[cfg(feature = "wgpu")]
pub(crate) mod gpu;
pub(crate) mod op;
mod spec;

/// Where operations find their tensors' bytes: the device's allocator and its segments.
pub(crate) type Memory = crate::alloc::Allocator<crate::segments::Backing>;
#[cfg(all(test, feature = "wgpu", feature = "cpu"))]
mod tests;
