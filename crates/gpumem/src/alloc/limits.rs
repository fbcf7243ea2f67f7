//! The rules every door applies to an allocator setting — PyTorch's minimum split size, the
//! garbage-collection threshold, the memory fraction — and the error each breach is, so that
//! the flags, `PYTORCH_CUDA_ALLOC_CONF`'s text (module `alloc_conf`) and
//! [`super::AllocatorConfig::validate_with`] cannot disagree. Which PyTorch uses which split
//! rule is the versions table's business (`versions::max_split_minimum`).

use super::LARGE_BUFFER;
use crate::size::format_bytes;

/// The first PyTorch (major, minor) whose `max_split_size_mb` may equal the 20 MiB minimum.
/// PyTorch's source checks `val > kLargeBuffer / MB` in `CUDAAllocatorConfig.cpp` (older
/// releases) and `val_env >= min_allowed_split_size_mb` in `c10/core/AllocatorConfig.cpp`
/// (newer ones); which release first carries `>=` is taken from this project's earlier notes,
/// not confirmed against a release tag.
pub const MAX_SPLIT_AT_LEAST_FROM: (u32, u32) = (2, 9);

/// How `max_split_size` compares with the 20 MiB minimum in a given PyTorch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxSplitMinimum {
    /// `>= 20` (PyTorch 2.9 and later; the default where no version is asked).
    #[default]
    AtLeast,
    /// `> 20` (before 2.9).
    MoreThan,
}

impl MaxSplitMinimum {
    /// PyTorch's operator, as its message prints it.
    pub fn operator(self) -> &'static str {
        match self {
            MaxSplitMinimum::AtLeast => ">=",
            MaxSplitMinimum::MoreThan => ">",
        }
    }

    fn allows(self, bytes: u64) -> bool {
        match self {
            MaxSplitMinimum::AtLeast => bytes >= LARGE_BUFFER,
            MaxSplitMinimum::MoreThan => bytes > LARGE_BUFFER,
        }
    }
}

/// `max_split_size` in bytes under `rule`: a smaller limit would keep even the 20 MiB
/// segments of small large-pool requests whole.
pub fn check_max_split_size(bytes: u64, rule: MaxSplitMinimum) -> Result<u64, ConfigError> {
    if rule.allows(bytes) {
        Ok(bytes)
    } else {
        Err(ConfigError::MaxSplitTooSmall(bytes, rule))
    }
}

/// `garbage_collection_threshold`: strictly between 0 and 1, as PyTorch requires.
pub fn check_gc_threshold(t: f64) -> Result<f64, ConfigError> {
    if t > 0.0 && t < 1.0 {
        Ok(t)
    } else {
        Err(ConfigError::GcThresholdRange(t))
    }
}

/// `set_per_process_memory_fraction`: from 0 to 1.
pub fn check_memory_fraction(f: f64) -> Result<f64, ConfigError> {
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(ConfigError::FractionRange(f))
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
            "the max split size must be more than {} (PyTorch before {}.{}: max_split_size_mb must be > 20), got {got}",
            format_bytes(LARGE_BUFFER),
            MAX_SPLIT_AT_LEAST_FROM.0,
            MAX_SPLIT_AT_LEAST_FROM.1
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 MiB itself: allowed under `>=`, refused under `>`; the other settings' ranges.
    #[test]
    fn each_rule_refuses_what_pytorch_refuses() {
        let twenty = LARGE_BUFFER;
        assert!(check_max_split_size(twenty, MaxSplitMinimum::AtLeast).is_ok());
        let e = check_max_split_size(twenty, MaxSplitMinimum::MoreThan).unwrap_err();
        assert!(e.to_string().contains("more than 20.00 MiB"), "{e}");
        assert!(check_max_split_size(twenty + 1, MaxSplitMinimum::MoreThan).is_ok());
        let e = check_max_split_size(twenty - 1, MaxSplitMinimum::AtLeast).unwrap_err();
        assert!(e.to_string().contains("at least 20.00 MiB"), "{e}");
        assert!(check_gc_threshold(1.0).is_err() && check_gc_threshold(0.0).is_err());
        assert!(check_gc_threshold(f64::NAN).is_err());
        assert_eq!(check_gc_threshold(0.5), Ok(0.5));
        assert!(check_memory_fraction(1.5).is_err() && check_memory_fraction(0.0).is_ok());
    }
}
