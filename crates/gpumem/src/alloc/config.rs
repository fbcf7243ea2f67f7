//! The allocator's settings, PyTorch's `PYTORCH_CUDA_ALLOC_CONF` options.

use super::LARGE_BUFFER;

// ANCHOR: allocator_config
/// The allocator's settings (PyTorch's `PYTORCH_CUDA_ALLOC_CONF` and
/// `PYTORCH_NO_CUDA_MEMORY_CACHING`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AllocatorConfig {
    /// Total bytes the device may reserve; `None` means "until the backing refuses".
    pub capacity: Option<u64>,
    /// Blocks of at least this size are never split (`max_split_size_mb`).
    pub max_split_size: Option<u64>,
    /// Reclaim cached segments when reserved passes this fraction of the capacity
    /// (`garbage_collection_threshold`).
    pub gc_threshold: Option<f64>,
    /// `false` gives every request its own segment and returns it on free.
    pub caching: bool,
}
// ANCHOR_END: allocator_config

impl Default for AllocatorConfig {
    fn default() -> Self {
        Self {
            capacity: None,
            max_split_size: None,
            gc_threshold: None,
            caching: true,
        }
    }
}

/// Settings that make no sense.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "max split size must be at least {} (PyTorch's max_split_size_mb has the same minimum, 20), got {}",
        crate::size::format_bytes(LARGE_BUFFER),
        crate::size::format_bytes(*.0)
    )]
    MaxSplitTooSmall(u64),
    #[error("garbage collection threshold must be between 0 and 1 (exclusive), got {0}")]
    GcThresholdRange(f64),
    #[error(
        "a garbage collection threshold needs a known capacity; give the device memory as a size"
    )]
    GcNeedsCapacity,
}

impl AllocatorConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(m) = self.max_split_size
            && m < LARGE_BUFFER
        {
            return Err(ConfigError::MaxSplitTooSmall(m));
        }
        if let Some(t) = self.gc_threshold {
            if !(t > 0.0 && t < 1.0) {
                return Err(ConfigError::GcThresholdRange(t));
            }
            if self.capacity.is_none() {
                return Err(ConfigError::GcNeedsCapacity);
            }
        }
        Ok(())
    }
}
