//! `--alloc-conf`: the allocator's settings in `PYTORCH_CUDA_ALLOC_CONF`'s own syntax
//! (`expandable_segments:True,max_split_size_mb:128`), checked as PyTorch checks them. What
//! the engine's allocator does not model is refused by name rather than replayed wrongly.

use anyhow::{Result, bail};
use gpumem::alloc::{AllocatorConfig, LARGE_BUFFER};

/// Options that only touch pinned host memory or locking: accepted, no effect on the card.
const HOST_ONLY: [&str; 5] = [
    "pinned_use_cuda_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "release_lock_on_cudamalloc",
    "graph_capture_record_stream_reuse",
];

/// What `text` sets, on top of `config`; notes for options with no effect on device memory.
pub fn apply(text: &str, mut config: AllocatorConfig) -> Result<(AllocatorConfig, Vec<String>)> {
    let mut notes = Vec::new();
    for option in text.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let Some((key, value)) = option.split_once(':') else {
            bail!(
                "`{option}` in --alloc-conf is not KEY:VALUE (PYTORCH_CUDA_ALLOC_CONF's syntax, \
                 e.g. expandable_segments:True,max_split_size_mb:128)"
            );
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "max_split_size_mb" => config.max_split_size = Some(max_split(value)?),
            "garbage_collection_threshold" => config.gc_threshold = Some(threshold(value)?),
            "expandable_segments" => config.expandable_segments = boolean(key, value)?,
            "backend" => match value {
                "native" => {}
                "cudaMallocAsync" => bail!(
                    "backend:cudaMallocAsync hands memory to CUDA's own allocator, not PyTorch's \
                     caching allocator: the replay models only the native one"
                ),
                other => bail!(
                    "unknown allocator backend `{other}` (PyTorch's options are native and \
                     cudaMallocAsync)"
                ),
            },
            "roundup_power2_divisions" | "max_non_split_rounding_mb" => bail!(
                "{key} is not modelled: the engine's allocator rounds every request to 512 bytes \
                 and splits blocks as PyTorch does without it; refusing rather than replaying \
                 with rounding PyTorch would not use"
            ),
            k if HOST_ONLY.contains(&k) => notes.push(format!(
                "{k}: a setting of pinned host memory or locking, no effect on the card's memory"
            )),
            other => bail!(
                "unrecognized key `{other}` in --alloc-conf (the replay knows max_split_size_mb, \
                 garbage_collection_threshold, expandable_segments, backend and the pinned-memory \
                 options)"
            ),
        }
    }
    Ok((config, notes))
}

/// A whole number of MiB of at least 20, as PyTorch 2.9 and later require (`>=`).
fn max_split(value: &str) -> Result<u64> {
    let mb: u64 = value.parse().map_err(|_| {
        anyhow::anyhow!("max_split_size_mb:{value}: not a whole number of MiB (e.g. 128)")
    })?;
    let min = LARGE_BUFFER >> 20;
    if mb < min {
        bail!("CachingAllocator option max_split_size_mb too small, must be >= {min} (got {mb})");
    }
    mb.checked_mul(1 << 20)
        .ok_or_else(|| anyhow::anyhow!("max_split_size_mb:{mb} is too large to count in bytes"))
}

fn threshold(value: &str) -> Result<f64> {
    match value.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => bail!(
            "garbage_collection_threshold:{value}: must be a number between 0 and 1 (exclusive), \
             as PyTorch requires"
        ),
    }
}

/// PyTorch accepts exactly `True` or `False`.
fn boolean(key: &str, value: &str) -> Result<bool> {
    match value {
        "True" => Ok(true),
        "False" => Ok(false),
        _ => bail!("{key}:{value}: expected True or False (PyTorch's spelling)"),
    }
}

/// The settings a snapshot ran with (its `allocator_settings`), as the replay's default.
pub fn from_snapshot(s: &gpumem::snapshot::AllocatorSettings) -> AllocatorConfig {
    AllocatorConfig {
        max_split_size: u64::try_from(s.max_split_size)
            .ok()
            .filter(|&m| m > 0 && m < u64::MAX / 2),
        gc_threshold: Some(s.garbage_collection_threshold).filter(|&t| t > 0.0 && t < 1.0),
        expandable_segments: s.expandable_segments,
        ..AllocatorConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorchs_syntax_sets_the_config() {
        let (c, notes) = apply(
            "expandable_segments:True, max_split_size_mb:128,garbage_collection_threshold:0.6,\
             pinned_use_cuda_host_register:True",
            AllocatorConfig::default(),
        )
        .unwrap();
        assert!(c.expandable_segments);
        assert_eq!(c.max_split_size, Some(128 << 20));
        assert_eq!(c.gc_threshold, Some(0.6));
        assert_eq!(notes.len(), 1);
        let (d, _) = apply("", c.clone()).unwrap();
        assert_eq!(d, c);
    }

    #[test]
    fn what_pytorch_refuses_or_we_do_not_model_is_refused_by_name() {
        for (text, says) in [
            ("max_split_size_mb:19", "too small, must be >= 20"),
            ("max_split_size_mb:lots", "not a whole number"),
            ("garbage_collection_threshold:1.5", "between 0 and 1"),
            ("expandable_segments:true", "True or False"),
            ("roundup_power2_divisions:4", "not modelled"),
            ("backend:cudaMallocAsync", "CUDA's own allocator"),
            (
                "max_split_sized_mb:64",
                "unrecognized key `max_split_sized_mb`",
            ),
            ("expandable_segments", "not KEY:VALUE"),
        ] {
            let e = apply(text, AllocatorConfig::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(apply("max_split_size_mb:20", AllocatorConfig::default()).is_ok());
    }
}
