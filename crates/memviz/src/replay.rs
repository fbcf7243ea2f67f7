//! `memviz replay FILE`: the command-line door to the replay library (`gpumem-replay`). It
//! parses the flags into [`ReplaySettings`], reads the file, shows the library's progress
//! as bars, writes the replayed run's snapshot when asked, and prints the library's report
//! as text or JSON.

use anyhow::{Context, Result, bail};
use gpumem::lesson::CardChoice;
use gpumem::snapshot::Snapshot;
use gpumem_replay::{Progress, ReplayReport, ReplaySettings};
use std::path::{Path, PathBuf};

/// Replay a snapshot's trace (PyTorch's `_dump_snapshot` from a GPU, pytorch/record.py's
/// recording, or a demo's --memory-snapshot) through PyTorch's caching allocator rules on
/// another card or settings: does the step fit, where would it run out, what are the peaks.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 the step fits; 3 it does not fit the card (the \
                        report says where it ran out); 1 a file or setting that cannot be \
                        used; 2 a command line clap refuses."
)]
pub struct Cli {
    /// The snapshot: a pickle of the dict `torch.cuda.memory._snapshot()` returns, with a trace.
    pub file: PathBuf,
    /// The card: `ideal` (15.90 GiB, all of it for tensors), `lesson` (the lesson's card:
    /// 0.72 GiB outside the allocator, PyTorch 1.12) or a size (`80GiB`, `24GB`, `17179869184`).
    #[arg(long, value_name = "SIZE|ideal|lesson", default_value = "ideal")]
    pub card: CardChoice,
    /// The PyTorch, the memory outside the allocator and the allocator's settings, as the
    /// demos take them.
    #[command(flatten)]
    pub settings: cli::CardArgs,
    /// Replay at this batch (a recorded trace whose bytes are affine in the batch).
    #[arg(long, value_name = "N", value_parser = cli::args::parse_positive, allow_hyphen_values = true)]
    pub batch: Option<u64>,
    /// Also search the largest batch that fits the card (a recorded, affine trace).
    #[arg(long)]
    pub largest_batch: bool,
    /// The device whose trace to replay, when the snapshot has several.
    #[arg(long, value_name = "N")]
    pub device: Option<i64>,
    /// Write the replayed run as a memory snapshot (PyTorch's format) to OUT.
    #[arg(long, value_name = "OUT")]
    pub memory_snapshot: Option<PathBuf>,
    /// Stack frames printed for the tensor that did not fit (--json has them all).
    #[arg(long, value_name = "N", default_value_t = gpumem_replay::DEFAULT_FRAMES)]
    pub frames: usize,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

impl Cli {
    /// The flags as the library's settings.
    pub fn settings(&self) -> ReplaySettings {
        ReplaySettings {
            name: self.file.display().to_string(),
            card: self.card,
            context_memory: self.settings.context_memory,
            torch: self.settings.torch,
            compute_capability: self.settings.compute_capability,
            allocator: self.settings.allocator.overrides(),
            batch: self.batch,
            largest_batch: self.largest_batch,
            device: self.device,
            keep_snapshot: self.memory_snapshot.is_some(),
        }
    }
}

/// Reads the file and replays it as `cli` asks, with progress bars on a terminal.
pub fn replay(cli: &Cli) -> Result<ReplayReport> {
    let out = cli::Output::new(cli.json);
    let bar = cli::progress(0, "reading", out);
    let snap = Snapshot::read_with_progress(&cli.file, &mut |at, total| {
        bar.set_length(total);
        bar.set_position(at);
    })?;
    bar.finish_and_clear();
    if let Some(path) = &cli.memory_snapshot {
        check_writable(path)?;
    }
    let replaying = cli::progress(0, "replaying", out);
    let searching = cli::progress(0, "searching the largest batch", out);
    let report = gpumem_replay::replay_with_progress(&snap, &cli.settings(), &mut |p| match p {
        Progress::Replaying { done, of } => {
            replaying.set_length(of as u64);
            replaying.set_position(done as u64);
            if done == of {
                replaying.finish_and_clear();
            }
        }
        Progress::Searching { replays, batch } => {
            searching.set_position(replays as u64);
            searching.set_message(format!("searching the largest batch: trying {batch}"));
        }
    });
    replaying.finish_and_clear();
    searching.finish_and_clear();
    let report = report?;
    if let (Some(path), Some(s)) = (&cli.memory_snapshot, &report.snapshot) {
        s.write(path)?;
    }
    Ok(report)
}

/// Fails before the work when OUT cannot be written (its folder missing or read-only).
fn check_writable(path: &Path) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(d) = dir
        && !d.is_dir()
    {
        bail!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            d.display()
        );
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    if !existed {
        std::fs::remove_file(path).ok();
    }
    Ok(())
}

/// What `memviz replay` prints for `cli`.
pub fn answer(cli: &Cli) -> Result<(String, bool)> {
    let r = replay(cli)?;
    if cli.json {
        // Through a JSON value, whose keys are sorted: the document memviz has printed.
        let text = serde_json::to_string_pretty(&serde_json::to_value(&r)?)? + "\n";
        return Ok((text, r.fits));
    }
    let mut text = r.text(cli.frames);
    if let Some(path) = &cli.memory_snapshot {
        text += &format!("wrote {} (the replayed run's snapshot)\n", path.display());
    }
    Ok((text, r.fits))
}
