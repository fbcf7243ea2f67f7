//! The allocator's settings, PyTorch's `PYTORCH_CUDA_ALLOC_CONF` options.

use super::limits::{
    ConfigError, MaxSplitMinimum, check_gc_threshold, check_max_split_size, check_memory_fraction,
};

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

impl AllocatorConfig {
    /// `allowed_memory_maximum`: what the memory fraction lets the process reserve
    /// (`fraction × total`, truncated as PyTorch's `size_t` cast does), if one is set.
    pub fn allowed(&self) -> Option<u64> {
        let (f, c) = (self.memory_fraction?, self.capacity?);
        Some((f * c as f64) as u64)
    }

    /// [`AllocatorConfig::validate_with`] the newest PyTorch's split rule.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with(MaxSplitMinimum::default())
    }

    /// Whether a PyTorch with the split rule `split` (`versions::max_split_minimum`)
    /// would accept these settings, and whether they make sense together.
    pub fn validate_with(&self, split: MaxSplitMinimum) -> Result<(), ConfigError> {
        if let Some(m) = self.max_split_size {
            check_max_split_size(m, split)?;
        }
        if let Some(t) = self.gc_threshold {
            check_gc_threshold(t)?;
            if self.capacity.is_none() {
                return Err(ConfigError::GcNeedsCapacity);
            }
        }
        if let Some(f) = self.memory_fraction {
            check_memory_fraction(f)?;
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
