//! The allocator's settings, PyTorch's `PYTORCH_CUDA_ALLOC_CONF` options.

use super::LARGE_BUFFER;
use super::conf::{self, MaxSplitMinimum};
use crate::size::format_bytes;
use crate::versions::TorchVersion;

// ANCHOR: allocator_config
/// The allocator's settings (PyTorch's `PYTORCH_CUDA_ALLOC_CONF` and
/// `PYTORCH_NO_CUDA_MEMORY_CACHING`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AllocatorConfig {
    /// Total bytes the device may reserve; `None` means "until the backing refuses".
    pub capacity: Option<u64>,
    /// Blocks of at least this size are never split (`max_split_size_mb`).
    pub max_split_size: Option<u64>,
    /// Reclaim cached segments when reserved passes this fraction of the memory the
    /// process is allowed (`garbage_collection_threshold`). As in PyTorch it acts only when
    /// `memory_fraction` is set.
    pub gc_threshold: Option<f64>,
    /// `false` gives every request its own segment and returns it on free.
    pub caching: bool,
    /// The process may reserve at most this fraction of the capacity
    /// (`torch.cuda.set_per_process_memory_fraction`), in [0, 1].
    #[serde(default)]
    pub memory_fraction: Option<f64>,
    /// One segment per pool that grows by mapping pages (`expandable_segments:True`).
    #[serde(default)]
    pub expandable_segments: bool,
    /// Device memory held outside the allocator (the CUDA context, other processes): the
    /// card's free memory is the capacity less this and what the allocator reserves.
    #[serde(default)]
    pub context_memory: u64,
}
// ANCHOR_END: allocator_config

impl Default for AllocatorConfig {
    fn default() -> Self {
        Self {
            capacity: None,
            max_split_size: None,
            gc_threshold: None,
            caching: true,
            memory_fraction: None,
            expandable_segments: false,
            context_memory: 0,
        }
    }
}

/// Settings that make no sense.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", max_split_words(*.0, *.1))]
    MaxSplitTooSmall(u64, MaxSplitMinimum),
    #[error(
        "the garbage collection threshold is a fraction of the card between 0 and 1 (exclusive), e.g. 0.8; got {0}"
    )]
    GcThresholdRange(f64),
    #[error(
        "a garbage collection threshold needs a known capacity; give the device memory as a size"
    )]
    GcNeedsCapacity,
    #[error(
        "the memory fraction is a share of the card from 0 to 1 (as set_per_process_memory_fraction accepts), e.g. 0.5; got {0}"
    )]
    FractionRange(f64),
    #[error("a memory fraction needs a known capacity; give the device memory as a size")]
    FractionNeedsCapacity,
    #[error(
        "the memory outside the allocator ({}) is more than the card's capacity ({})",
        crate::size::format_bytes(*.0),
        crate::size::format_bytes(*.1)
    )]
    ContextTooLarge(u64, u64),
}

impl AllocatorConfig {
    /// `allowed_memory_maximum`: what the memory fraction lets the process reserve
    /// (`fraction × total`, truncated as PyTorch's `size_t` cast does), if one is set.
    pub fn allowed(&self) -> Option<u64> {
        let (f, c) = (self.memory_fraction?, self.capacity?);
        Some((f * c as f64) as u64)
    }

    /// [`AllocatorConfig::validate_for`] the newest PyTorch.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_for(None)
    }

    /// Whether `torch` (the newest where `None`) would accept these settings, and whether
    /// they make sense together.
    pub fn validate_for(&self, torch: Option<TorchVersion>) -> Result<(), ConfigError> {
        if let Some(m) = self.max_split_size {
            conf::check_max_split_size(m, MaxSplitMinimum::of(torch))?;
        }
        if let Some(t) = self.gc_threshold {
            conf::check_gc_threshold(t)?;
            if self.capacity.is_none() {
                return Err(ConfigError::GcNeedsCapacity);
            }
        }
        if let Some(f) = self.memory_fraction {
            conf::check_memory_fraction(f)?;
            if self.capacity.is_none() {
                return Err(ConfigError::FractionNeedsCapacity);
            }
        }
        if let Some(c) = self.capacity
            && self.context_memory > c
        {
            return Err(ConfigError::ContextTooLarge(self.context_memory, c));
        }
        Ok(())
    }
}

/// The max split size's error: the minimum as `rule` states it, and what was given (in bytes
/// when under a KiB, so that `0` reads as 0 B).
fn max_split_words(bytes: u64, rule: MaxSplitMinimum) -> String {
    let got = if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format_bytes(bytes)
    };
    match rule {
        MaxSplitMinimum::AtLeast => format!(
            "the max split size must be at least {} (PyTorch's max_split_size_mb has the same minimum, 20), got {got}",
            format_bytes(LARGE_BUFFER)
        ),
        MaxSplitMinimum::MoreThan => format!(
            "the max split size must be more than {} (PyTorch before {}: max_split_size_mb must be > 20), got {got}",
            format_bytes(LARGE_BUFFER),
            conf::MAX_SPLIT_AT_LEAST_FROM
        ),
    }
}
