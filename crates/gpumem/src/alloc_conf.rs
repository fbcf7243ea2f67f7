//! `PYTORCH_CUDA_ALLOC_CONF`'s text ([`AllocConf`]), settings given one by one over it
//! ([`Overrides`]), and the settings a snapshot ran with ([`from_snapshot`]): each value
//! checked by the allocator's own rules ([`crate::alloc::check_max_split_size`] and the rest).

use crate::alloc::{
    AllocatorConfig, LARGE_BUFFER, MaxSplitMinimum, check_gc_threshold, check_max_split_size,
};
use std::fmt;
use std::str::FromStr;

/// Options that only touch pinned host memory or locking: accepted, no effect on the card.
const HOST_ONLY: [&str; 5] = [
    "pinned_use_cuda_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "release_lock_on_cudamalloc",
    "graph_capture_record_stream_reuse",
];

/// `PYTORCH_CUDA_ALLOC_CONF`'s text (`expandable_segments:True,max_split_size_mb:128`),
/// parsed and checked as PyTorch checks it. What the engine's allocator does not model is
/// refused by name rather than run wrongly.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllocConf {
    /// The text as given.
    pub text: String,
    pub max_split_size: Option<u64>,
    pub gc_threshold: Option<f64>,
    pub expandable_segments: Option<bool>,
    /// Options with no effect on device memory, in words.
    pub notes: Vec<String>,
}

/// The allocator's settings as a door takes them: a `PYTORCH_CUDA_ALLOC_CONF` text and the
/// single settings laid over it (the demos' and memviz's flags, the replay library's fields),
/// so every door lays them over a base the same way.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Overrides {
    /// Replaces the base's settings when given.
    pub alloc_conf: Option<AllocConf>,
    pub max_split_size: Option<u64>,
    pub gc_threshold: Option<f64>,
    pub memory_fraction: Option<f64>,
    pub expandable_segments: bool,
    pub no_caching: bool,
}

impl Overrides {
    /// `base` (or the defaults with `alloc_conf`'s settings) with the single settings over it.
    pub fn over(&self, base: AllocatorConfig) -> AllocatorConfig {
        let mut c = match &self.alloc_conf {
            Some(conf) => conf.apply(AllocatorConfig::default()),
            None => base,
        };
        c.max_split_size = self.max_split_size.or(c.max_split_size);
        c.gc_threshold = self.gc_threshold.or(c.gc_threshold);
        c.memory_fraction = self.memory_fraction.or(c.memory_fraction);
        c.expandable_segments |= self.expandable_segments;
        c.caching &= !self.no_caching;
        c
    }

    /// What `alloc_conf` accepts and has no effect on the card's memory, in words.
    pub fn conf_notes(&self) -> Vec<String> {
        self.alloc_conf
            .as_ref()
            .map_or_else(Vec::new, |c| c.notes.clone())
    }
}

impl AllocConf {
    /// `config` with what the text sets.
    pub fn apply(&self, mut config: AllocatorConfig) -> AllocatorConfig {
        if let Some(m) = self.max_split_size {
            config.max_split_size = Some(m);
        }
        if let Some(t) = self.gc_threshold {
            config.gc_threshold = Some(t);
        }
        if let Some(e) = self.expandable_segments {
            config.expandable_segments = e;
        }
        config
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "max_split_size_mb" => self.max_split_size = Some(max_split_mb(value)?),
            "garbage_collection_threshold" => self.gc_threshold = Some(threshold(value)?),
            "expandable_segments" => self.expandable_segments = Some(boolean(key, value)?),
            "backend" => match value {
                "native" => {}
                "cudaMallocAsync" => {
                    return Err(
                        "backend:cudaMallocAsync hands memory to CUDA's own allocator, \
                                not PyTorch's caching allocator: the engine models only the \
                                native one"
                            .into(),
                    );
                }
                other => {
                    return Err(format!(
                        "unknown allocator backend `{other}` (PyTorch's options are native and \
                         cudaMallocAsync)"
                    ));
                }
            },
            "roundup_power2_divisions" | "max_non_split_rounding_mb" => {
                return Err(format!(
                    "{key} is not modelled: the engine's allocator rounds every request to 512 \
                     bytes and splits blocks as PyTorch does without it; refusing rather than \
                     running with rounding PyTorch would not use"
                ));
            }
            k if HOST_ONLY.contains(&k) => self.notes.push(format!(
                "{k}: a setting of pinned host memory or locking, no effect on the card's memory"
            )),
            other => {
                return Err(format!(
                    "unrecognized key `{other}` in --alloc-conf (the engine knows \
                     max_split_size_mb, garbage_collection_threshold, expandable_segments, \
                     backend and the pinned-memory options)"
                ));
            }
        }
        Ok(())
    }
}

impl FromStr for AllocConf {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut conf = AllocConf {
            text: text.to_string(),
            ..AllocConf::default()
        };
        for option in text.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let Some((key, value)) = option.split_once(':') else {
                return Err(format!(
                    "`{option}` in --alloc-conf is not KEY:VALUE (PYTORCH_CUDA_ALLOC_CONF's \
                     syntax, e.g. expandable_segments:True,max_split_size_mb:128)"
                ));
            };
            conf.set(key.trim(), value.trim())?;
        }
        Ok(conf)
    }
}

impl fmt::Display for AllocConf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A whole number of MiB, checked by the newest PyTorch's rule here (the version asked is
/// checked with the whole configuration, [`AllocatorConfig::validate_for`]).
fn max_split_mb(value: &str) -> Result<u64, String> {
    let mb: u64 = value
        .parse()
        .map_err(|_| format!("max_split_size_mb:{value}: not a whole number of MiB (e.g. 128)"))?;
    let bytes = mb
        .checked_mul(1 << 20)
        .ok_or_else(|| format!("max_split_size_mb:{mb} is too large to count in bytes"))?;
    let rule = MaxSplitMinimum::AtLeast;
    check_max_split_size(bytes, rule).map_err(|_| {
        format!(
            "CachingAllocator option max_split_size_mb too small, must be {} {} (got {mb})",
            rule.operator(),
            LARGE_BUFFER >> 20
        )
    })
}

fn threshold(value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .and_then(|v| check_gc_threshold(v).ok())
        .ok_or_else(|| {
            format!(
                "garbage_collection_threshold:{value}: must be a number between 0 and 1 \
                 (exclusive), as PyTorch requires"
            )
        })
}

/// PyTorch accepts exactly `True` or `False`.
fn boolean(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "True" => Ok(true),
        "False" => Ok(false),
        _ => Err(format!(
            "{key}:{value}: expected True or False (PyTorch's spelling)"
        )),
    }
}

/// The settings a snapshot ran with (its `allocator_settings`).
pub fn from_snapshot(s: &crate::snapshot::AllocatorSettings) -> AllocatorConfig {
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

    fn apply(text: &str) -> Result<(AllocatorConfig, Vec<String>), String> {
        let c: AllocConf = text.parse()?;
        Ok((c.apply(AllocatorConfig::default()), c.notes))
    }

    #[test]
    fn pytorchs_syntax_sets_the_config() {
        let (c, notes) = apply(
            "expandable_segments:True, max_split_size_mb:128,garbage_collection_threshold:0.6,\
             pinned_use_cuda_host_register:True",
        )
        .unwrap();
        assert!(c.expandable_segments);
        assert_eq!(c.max_split_size, Some(128 << 20));
        assert_eq!(c.gc_threshold, Some(0.6));
        assert_eq!(notes.len(), 1);
        let empty: AllocConf = "".parse().unwrap();
        assert_eq!(empty.apply(c.clone()), c);
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
            let e = apply(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(apply("max_split_size_mb:20").is_ok());
    }
}
