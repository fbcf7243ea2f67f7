//! Every kernel against a plain-Rust reference (f64), on odd shapes, under the device's
//! limits and under forced tiny ones (4 KiB bindings, 256-byte offset alignment, 3
//! workgroups per dimension) with tensors split over several buffers, so pieces,
//! straddling rows and grid-stride loops all run.
//!
//! Tolerance: |gpu − ref| ≤ 1e-4 · max(1, |ref|) per element.

mod common;
mod downlevel;
mod dtypes;
mod elementwise;
mod errors;
mod foreach;
mod fused;
mod loss;
mod matmul;
mod optim;
mod optim_fused;
mod reduce;
mod ternary;
mod xent;
mod xent_fused;
