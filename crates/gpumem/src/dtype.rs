//! The element types the engine stores, and their sizes: below the tensors, so that the
//! allocator's floor and the executor can name them.

use std::fmt;

/// Element types the engine stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    F16,
    F32,
    F64,
    U32,
    /// Class labels, as PyTorch's `cross_entropy` wants them.
    I64,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> u64 {
        match self {
            DType::F16 => 2,
            DType::F32 | DType::U32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::U32 => "uint32",
            DType::I64 => "int64",
        })
    }
}
