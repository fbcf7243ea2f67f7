//! The allocator's settings as flags, PyTorch's `PYTORCH_CUDA_ALLOC_CONF` options and
//! `PYTORCH_NO_CUDA_MEMORY_CACHING` by other names. Each value is checked as it is parsed, so
//! a bad one is a clear command-line error rather than a failure halfway through a run.

use clap::Args;
use gpumem::alloc::AllocatorConfig;
use gpumem::alloc_conf::{AllocConf, Overrides};
use gpumem::size::format_bytes;

/// How the caching allocator behaves.
#[derive(Debug, Clone, Default, Args)]
pub struct AllocatorArgs {
    /// Never split cached blocks of at least SIZE (PyTorch's max_split_size_mb); at least
    /// 20 MiB. Unset: every block may be split.
    #[arg(long, value_name = "SIZE", value_parser = parse_max_split_size)]
    pub max_split_size: Option<u64>,

    /// Give unused cached segments back, oldest first, once reserved memory passes this
    /// fraction of what --memory-fraction allows (PyTorch's garbage_collection_threshold);
    /// between 0 and 1. As in PyTorch it does nothing without --memory-fraction.
    #[arg(long, value_name = "FRACTION", value_parser = parse_gc_threshold, allow_hyphen_values = true)]
    pub gc_threshold: Option<f64>,

    /// Let the allocator reserve at most this fraction of the card, from 0 to 1
    /// (torch.cuda.set_per_process_memory_fraction): a smaller card for this process.
    #[arg(long, value_name = "F", value_parser = parse_memory_fraction, allow_hyphen_values = true)]
    pub memory_fraction: Option<f64>,

    /// One segment per pool that grows by mapping 2 MiB (small pool) or 20 MiB (large pool)
    /// pages (PyTorch's expandable_segments:True).
    #[arg(long)]
    pub expandable_segments: bool,

    /// Turn the cache off: every tensor gets its own segment, returned to the device when the
    /// tensor is freed (PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING=1). Unlike PyTorch, whose
    /// counters then read 0, the engine keeps counting, so the figures show what the device
    /// holds.
    #[arg(long)]
    pub no_caching: bool,

    /// The allocator's settings in PYTORCH_CUDA_ALLOC_CONF's own syntax
    /// (`expandable_segments:True,max_split_size_mb:128`, `garbage_collection_threshold:0.8`);
    /// the flags above change what it sets. memviz replay: it replaces the snapshot's own
    /// settings [default: the settings the snapshot ran with].
    #[arg(long, value_name = "CONF")]
    pub alloc_conf: Option<AllocConf>,
}

impl AllocatorArgs {
    /// The allocator's configuration (the capacity comes from the device's memory).
    pub fn config(&self) -> AllocatorConfig {
        self.over(AllocatorConfig::default())
    }

    /// `base` (the settings a snapshot ran with, say) with `--alloc-conf`'s text in its
    /// place when given, then what the flags set.
    pub fn over(&self, base: AllocatorConfig) -> AllocatorConfig {
        self.overrides().over(base)
    }

    /// The flags as plain values, for a library that takes no clap (the replay's).
    pub fn overrides(&self) -> Overrides {
        Overrides {
            alloc_conf: self.alloc_conf.clone(),
            max_split_size: self.max_split_size,
            gc_threshold: self.gc_threshold,
            memory_fraction: self.memory_fraction,
            expandable_segments: self.expandable_segments,
            no_caching: self.no_caching,
        }
    }

    /// What `--alloc-conf` accepts and has no effect on the card's memory, in words.
    pub fn conf_notes(&self) -> Vec<String> {
        self.overrides().conf_notes()
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
    if let Some(f) = config.memory_fraction {
        parts.push(format!("memory fraction {f}"));
    }
    if config.expandable_segments {
        parts.push("expandable_segments".to_string());
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

/// What the settings mean beyond their names, where the engine or PyTorch would surprise
/// a learner: lines for the demos to print under their settings.
pub fn notes(config: &AllocatorConfig) -> Vec<String> {
    let mut out = Vec::new();
    if config.gc_threshold.is_some() && config.memory_fraction.is_none() {
        out.push(
            "note: the garbage collection threshold does nothing without a memory fraction \
             (PyTorch collects only after set_per_process_memory_fraction); add --memory-fraction 1 \
             to make it act on the whole card"
                .to_string(),
        );
    }
    if !config.caching {
        out.push(
            "note: with caching off PyTorch bypasses its allocator, so its memory_allocated() and \
             memory_reserved() read 0 and an out-of-memory is CUDA's own \"CUDA error: out of \
             memory\"; the engine keeps counting (every segment is one tensor) so you can see what \
             the device holds"
                .to_string(),
        );
    }
    if config.expandable_segments {
        out.push(
            "note: expandable segments are emulated in the allocator's accounting: the pages, \
             their mapping and the statistics are PyTorch's; what a real map/unmap costs (driver \
             calls that synchronise the GPU) and CUDA's limits on sharing such memory between \
             processes are not modelled"
                .to_string(),
        );
    }
    out
}

pub use gpumem::parse::{
    gc_threshold as parse_gc_threshold, max_split_size as parse_max_split_size,
    memory_fraction as parse_memory_fraction,
};

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
        assert!(notes(&c)[0].contains("does nothing without a memory fraction"));
        let e = parse(&["--expandable-segments", "--memory-fraction", "0"]).unwrap();
        assert_eq!(e.config().memory_fraction, Some(0.0));
        assert!(e.config().expandable_segments);
        assert!(
            e.describe().contains("expandable_segments"),
            "{}",
            e.describe()
        );
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

    /// `--alloc-conf`'s text first, the flags over it; a base it replaces.
    #[test]
    fn the_conf_text_and_the_flags_combine() {
        let a = parse(&[
            "--alloc-conf",
            "expandable_segments:True,max_split_size_mb:128,pinned_use_background_threads:True",
            "--max-split-size",
            "64MiB",
        ])
        .unwrap();
        let c = a.config();
        assert!(c.expandable_segments);
        assert_eq!(c.max_split_size, Some(64 << 20));
        assert_eq!(a.conf_notes().len(), 1);
        let snapshot_ran_with = AllocatorConfig {
            gc_threshold: Some(0.5),
            ..AllocatorConfig::default()
        };
        assert_eq!(a.over(snapshot_ran_with.clone()).gc_threshold, None);
        let flags_only = parse(&["--no-caching"]).unwrap();
        let kept = flags_only.over(snapshot_ran_with);
        assert_eq!((kept.gc_threshold, kept.caching), (Some(0.5), false));
        let e = parse(&["--alloc-conf", "max_split_size_mb:19"]).unwrap_err();
        assert!(e.contains("must be >= 20"), "{e}");
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
            (&["--memory-fraction", "1.5"], "from 0 to 1"),
            (&["--memory-fraction", "-0.1"], "from 0 to 1"),
            (&["--memory-fraction", "nan"], "from 0 to 1"),
            (&["--memory-fraction", "half"], "not a number"),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(expected), "{args:?}: {e}");
        }
    }
}
