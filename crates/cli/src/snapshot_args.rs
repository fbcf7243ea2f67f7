//! `--memory-snapshot PATH`, which every challenge takes: the allocator's history of the
//! demo's headline run, written as PyTorch's `torch.cuda.memory._dump_snapshot` writes it,
//! to open with `cargo run -p memviz -- PATH` or at pytorch.org/memory_viz. Each challenge
//! says in its `--help` which run that is ([`SnapshotArgs::describe`]).

use anyhow::Context;
use clap::{Args, Command};
use gpumem::alloc::History;
use gpumem::{Device, DeviceOptions};
use std::path::{Path, PathBuf};

/// Where to write a memory snapshot, and how much history it keeps.
#[derive(Debug, Clone, Default, Args)]
pub struct SnapshotArgs {
    /// Write a memory snapshot of the headline run to PATH: a pickle in the format of
    /// torch.cuda.memory._dump_snapshot, with the step's tensor names. A run that runs out of
    /// memory is snapshotted at that moment, with everything then alive (as a PyTorch
    /// out-of-memory observer dumps one); any other at its end. Open it with `cargo run -p
    /// memviz -- PATH` or at pytorch.org/memory_viz.
    #[arg(long, value_name = "PATH")]
    pub memory_snapshot: Option<PathBuf>,
    /// Keep only the newest N allocator events in the snapshot's trace, as
    /// `_record_memory_history(max_entries=N)` does (default: all of them, PyTorch's default).
    #[arg(long, value_name = "N", requires = "memory_snapshot", value_parser = parse_entries)]
    pub memory_snapshot_max_entries: Option<usize>,
}

fn parse_entries(s: &str) -> Result<usize, String> {
    let n = crate::args::parse_positive(s)?;
    usize::try_from(n).map_err(|_| format!("{n} is more entries than memory can hold"))
}

impl SnapshotArgs {
    /// `cmd` with `--memory-snapshot`'s help naming the run it records.
    pub fn describe(cmd: Command, run: &str) -> Command {
        cmd.mut_arg("memory_snapshot", |a| {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            a.help(help.replacen("the headline run", &format!("the headline run ({run})"), 1))
        })
    }

    /// The events the history keeps.
    pub fn max_entries(&self) -> usize {
        self.memory_snapshot_max_entries
            .unwrap_or(History::UNBOUNDED)
    }

    /// `options` recording the history from the device's opening, when a snapshot is asked.
    pub fn options(&self, options: DeviceOptions) -> DeviceOptions {
        DeviceOptions {
            record_history: self.memory_snapshot.as_ref().map(|_| self.max_entries()),
            ..options
        }
    }

    /// Fails now, before the run, if the snapshot could not be written: creates the file
    /// (the dump overwrites it).
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.memory_snapshot {
            std::fs::File::create(path).with_context(|| {
                format!(
                    "--memory-snapshot: cannot write the snapshot to {}",
                    path.display()
                )
            })?;
        }
        Ok(())
    }

    /// Starts recording on `device` when a snapshot is asked.
    pub fn start(&self, device: &Device) {
        if self.memory_snapshot.is_some() {
            device.record_memory_history(true, self.max_entries());
        }
    }

    /// Writes `device`'s snapshot when one is asked — the one taken at its first
    /// out-of-memory, else one now; returns the path written.
    pub fn write(&self, device: &Device) -> anyhow::Result<Option<&Path>> {
        if self.memory_snapshot.is_none() {
            return Ok(None);
        }
        let snapshot = device
            .oom_snapshot()
            .unwrap_or_else(|| device.memory_snapshot());
        self.write_snapshot(&snapshot)
    }

    /// Writes an already taken snapshot when one is asked; returns the path written.
    pub fn write_snapshot(
        &self,
        snapshot: &gpumem::snapshot::Snapshot,
    ) -> anyhow::Result<Option<&Path>> {
        let Some(path) = &self.memory_snapshot else {
            return Ok(None);
        };
        snapshot.write(path).context("--memory-snapshot")?;
        Ok(Some(path))
    }
}

/// The line a demo prints after writing a snapshot.
pub fn written_line(path: &Path) -> String {
    format!(
        "memory snapshot: {} (cargo run -p memviz -- {0}, or pytorch.org/memory_viz)",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches, Parser};

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        snapshot: SnapshotArgs,
    }

    fn parse(args: &[&str]) -> Result<SnapshotArgs, clap::Error> {
        let cmd = SnapshotArgs::describe(Cli::command(), "the one run");
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))?;
        Ok(Cli::from_arg_matches(&m)?.snapshot)
    }

    #[test]
    fn the_help_names_the_run() {
        let mut cmd = SnapshotArgs::describe(Cli::command(), "the one run");
        let help = cmd.render_long_help().to_string();
        assert!(help.contains("the one run"), "{help}");
        assert!(help.contains("memviz"), "{help}");
    }

    #[test]
    fn max_entries_needs_a_path_and_a_positive_count() {
        assert!(parse(&["--memory-snapshot-max-entries", "5"]).is_err());
        assert!(
            parse(&[
                "--memory-snapshot",
                "x",
                "--memory-snapshot-max-entries",
                "0"
            ])
            .is_err()
        );
        let a = parse(&[
            "--memory-snapshot",
            "x",
            "--memory-snapshot-max-entries",
            "7",
        ])
        .unwrap();
        assert_eq!(a.max_entries(), 7);
        assert_eq!(a.options(DeviceOptions::default()).record_history, Some(7));
        assert_eq!(
            parse(&[])
                .unwrap()
                .options(DeviceOptions::default())
                .record_history,
            None
        );
    }

    #[test]
    fn an_unwritable_path_fails_before_the_run() {
        let a = parse(&["--memory-snapshot", "/no/such/folder/s.pickle"]).unwrap();
        let e = format!("{:#}", a.check().expect_err("unwritable"));
        assert!(
            e.contains("--memory-snapshot") && e.contains("/no/such/folder"),
            "{e}"
        );
    }

    #[test]
    fn the_snapshot_is_written_from_the_device() {
        let path = std::env::temp_dir().join(format!("demo-snap-{}.pickle", std::process::id()));
        let a = parse(&["--memory-snapshot", path.to_str().unwrap()]).unwrap();
        a.check().unwrap();
        let device = Device::plan(1 << 30);
        a.start(&device);
        let _t = gpumem::Tensor::new(
            &device,
            4,
            4,
            gpumem::DType::F32,
            gpumem::Role::Temporary,
            "w",
        )
        .unwrap();
        assert_eq!(a.write(&device).unwrap(), Some(path.as_path()));
        let s = gpumem::snapshot::Snapshot::read(&path).unwrap();
        assert_eq!(s.device_traces[0].len(), 2, "segment_alloc, alloc");
        std::fs::remove_file(&path).ok();
    }
}
