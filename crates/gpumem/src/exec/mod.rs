//! Running work on a backing: the operations of a training step, and moving data in and out.

mod compute;
mod cpu;
#[cfg(any(test, feature = "testing"))]
pub use cpu::bandwidth;
mod gpu;
pub mod ops;
mod spec;
mod transfer;

pub(crate) use transfer::{read_back, write};
