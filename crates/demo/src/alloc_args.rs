//! The allocator's settings as flags, PyTorch's `PYTORCH_CUDA_ALLOC_CONF` options and
//! `PYTORCH_NO_CUDA_MEMORY_CACHING` by other names. Each value is checked as it is parsed, so
//! a bad one is a clear command-line error rather than a failure halfway through a run.

use clap::Args;
use gpumem::alloc::{AllocatorConfig, LARGE_BUFFER};
use gpumem::device::DeviceOptions;
use gpumem::size::{format_bytes, parse_bytes};

/// How the caching allocator behaves.
#[derive(Debug, Clone, Default, Args)]
pub struct AllocatorArgs {
    /// Never split cached blocks of at least SIZE (PyTorch's max_split_size_mb); at least
    /// 20 MiB. Unset: every block may be split.
    #[arg(long, value_name = "SIZE", value_parser = parse_max_split_size)]
    pub max_split_size: Option<u64>,

    /// Give unused cached segments back, oldest first, once reserved memory passes this
    /// fraction of the card (PyTorch's garbage_collection_threshold); between 0 and 1.
    #[arg(long, value_name = "FRACTION", value_parser = parse_gc_threshold, allow_hyphen_values = true)]
    pub gc_threshold: Option<f64>,

    /// Turn the cache off: every tensor gets its own segment, returned to the device when the
    /// tensor is freed (PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING=1).
    #[arg(long)]
    pub no_caching: bool,
}

impl AllocatorArgs {
    /// The allocator's configuration (the capacity comes from the device's memory).
    pub fn config(&self) -> AllocatorConfig {
        AllocatorConfig {
            max_split_size: self.max_split_size,
            gc_threshold: self.gc_threshold,
            caching: !self.no_caching,
            ..Default::default()
        }
    }

    /// `options` with these allocator settings.
    pub fn apply(&self, options: DeviceOptions) -> DeviceOptions {
        DeviceOptions {
            allocator: self.config(),
            ..options
        }
    }

    /// The settings in words, e.g. `max_split_size 64.00 MiB, no caching`, or `defaults`.
    pub fn describe(&self) -> String {
        describe(&self.config())
    }
}

/// An allocator configuration in words, as the demos print it.
pub fn describe(config: &AllocatorConfig) -> String {
    let mut parts = Vec::new();
    if let Some(m) = config.max_split_size {
        parts.push(format!("max_split_size {}", format_bytes(m)));
    }
    if let Some(t) = config.gc_threshold {
        parts.push(format!("garbage_collection_threshold {t}"));
    }
    if !config.caching {
        parts.push("no caching".to_string());
    }
    if parts.is_empty() {
        "defaults".to_string()
    } else {
        parts.join(", ")
    }
}

/// At least 20 MiB, as PyTorch requires of `max_split_size_mb` (older versions: more than
/// 20): a smaller limit would keep even the 20 MiB segments of small large-pool requests
/// whole.
pub fn parse_max_split_size(s: &str) -> Result<u64, String> {
    let bytes = parse_bytes(s).map_err(|e| e.to_string())?;
    if bytes < LARGE_BUFFER {
        return Err(format!(
            "the max split size must be at least {} (PyTorch's max_split_size_mb has the same minimum, 20), got {}",
            format_bytes(LARGE_BUFFER),
            if bytes < 1024 {
                format!("{bytes} B")
            } else {
                format_bytes(bytes)
            }
        ));
    }
    Ok(bytes)
}

/// A fraction strictly between 0 and 1.
pub fn parse_gc_threshold(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        Ok(v) => Err(format!(
            "the garbage collection threshold is a fraction of the card between 0 and 1 (exclusive), e.g. 0.8; got {v}"
        )),
        Err(_) => Err(format!(
            "`{t}` is not a number: the garbage collection threshold is a fraction between 0 and 1, e.g. 0.8"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        alloc: AllocatorArgs,
    }

    fn parse(args: &[&str]) -> Result<AllocatorArgs, String> {
        let all = std::iter::once("test").chain(args.iter().copied());
        Cli::try_parse_from(all)
            .map(|c| c.alloc)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn good_values_build_the_config() {
        let a = parse(&["--max-split-size", "64MiB", "--gc-threshold", "0.8"]).unwrap();
        let c = a.config();
        assert_eq!(c.max_split_size, Some(64 << 20));
        assert_eq!(c.gc_threshold, Some(0.8));
        assert!(c.caching);
        assert!(
            parse(&["--no-caching"])
                .unwrap()
                .config()
                .caching
                .eq(&false)
        );
        assert_eq!(parse(&[]).unwrap().config(), AllocatorConfig::default());
        assert!(
            a.describe().contains("max_split_size 64.00 MiB"),
            "{}",
            a.describe()
        );
    }

    #[test]
    fn bad_values_explain_themselves() {
        for (args, expected) in [
            (&["--gc-threshold", "1.5"][..], "between 0 and 1"),
            (&["--gc-threshold", "0"], "between 0 and 1"),
            (&["--gc-threshold", "-0.5"], "between 0 and 1"),
            (&["--gc-threshold", "nan"], "between 0 and 1"),
            (&["--gc-threshold", "lots"], "not a number"),
            (&["--max-split-size", "0"], "at least 20.00 MiB"),
            (&["--max-split-size", "19MiB"], "at least 20.00 MiB"),
            (&["--max-split-size", "16XB"], "`XB` is not a unit"),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(expected), "{args:?}: {e}");
        }
    }
}
