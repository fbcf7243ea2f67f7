//! The one error type of kernel calls.

use crate::view::DType;

/// A kernel call that cannot be planned. Never a panic, never a wgpu error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    #[error("shape mismatch: {0}")]
    Shape(String),
    #[error("{name}: expected dtype {expected:?}, got {got:?}")]
    DType {
        name: String,
        expected: DType,
        got: DType,
    },
    #[error("{name}: bad parts: {reason}")]
    Parts { name: String, reason: String },
    #[error("{name}: one row is {row_bytes} bytes, more than a binding may hold ({max_binding})")]
    RowTooLarge {
        name: String,
        row_bytes: u64,
        max_binding: u64,
    },
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("creating pipelines failed: {0}")]
    Pipeline(String),
}
