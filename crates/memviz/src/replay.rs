//! `memviz replay FILE`: a snapshot's trace replayed through the engine's caching allocator
//! (PyTorch's rules) on any card and allocator settings. It answers whether the step fits,
//! or the out-of-memory error PyTorch would raise (in the asked version's words) at which
//! trace entry, for which tensor and from where; the peaks `max_memory_allocated()` and
//! `max_memory_reserved()` would read; what is cached but unused at the peak; and, for a
//! trace `pytorch/record.py` wrote, any batch (`--batch`, `--largest-batch`) from its affine
//! form, with the cuBLAS workspaces a GPU would add. `--memory-snapshot` writes the replayed
//! run as a snapshot memviz and PyTorch's viewer draw.

mod engine;
mod largest;
mod report;
mod source;
mod workspaces;

pub use engine::{AtPeak, Outcome, ReplayCard};
pub use largest::{Largest, MAX_BATCH};
pub use source::{Kind, Plan};

use anyhow::{Context, Result, bail};
use gpumem::alloc::AllocatorConfig;
use gpumem::alloc::conf;
use gpumem::cublas::WorkspaceRules;
use gpumem::lesson::{Card as Preset, CardChoice};
use gpumem::snapshot::Snapshot;
use gpumem::versions::{DEFAULT_COMPUTE_CAPABILITY, KNOWN, Rules, TorchVersion};
use std::path::PathBuf;

/// Replay a snapshot's trace (PyTorch's `_dump_snapshot` from a GPU, pytorch/record.py's
/// recording, or a demo's --memory-snapshot) through PyTorch's caching allocator rules on
/// another card or settings: does the step fit, where would it run out, what are the peaks.
#[derive(Debug, clap::Args)]
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
    #[arg(long, value_name = "N", default_value = "6")]
    pub frames: usize,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Everything the replay was asked, resolved.
#[derive(Debug, Clone)]
pub struct Setup {
    pub card: ReplayCard,
    pub card_words: String,
    pub capacity: u64,
    pub torch: Option<Rules>,
    /// Where the version came from, in words.
    pub torch_from: String,
    pub workspaces: WorkspaceRules,
    pub alloc_conf: String,
    pub notes: Vec<String>,
}

impl Cli {
    /// The PyTorch whose rules apply, and why.
    fn torch(&self, snap: &Snapshot) -> (Option<Rules>, String) {
        if let Some(v) = self.settings.torch {
            return (Some(Rules::of(v)), "--torch".into());
        }
        match self.card {
            CardChoice::Preset(p) => (p.torch(), format!("the {} card's", preset_name(p))),
            CardChoice::Bytes(_) => match snap.recorder.as_ref() {
                Some(r) => match r.torch.parse::<TorchVersion>() {
                    Ok(v) => (Some(Rules::of(v)), "the recording's".into()),
                    Err(_) => (None, "none known".into()),
                },
                None => (None, "none asked".into()),
            },
        }
    }

    /// Resolves the card, the settings and the version for `snap` and its `plan`.
    pub fn setup(&self, snap: &Snapshot, plan: &Plan) -> Result<Setup> {
        use gpumem::size::format_bytes;
        let (capacity, outside) = (self.card.capacity(), self.card.outside());
        let card_words = match self.card {
            CardChoice::Preset(Preset::Ideal) => {
                format!("the ideal card: {}", format_bytes(capacity))
            }
            CardChoice::Preset(Preset::Lesson) => {
                format!("the lesson's card: {}", format_bytes(capacity))
            }
            CardChoice::Bytes(b) => format_bytes(b),
        };
        let alloc = &self.settings.allocator;
        let (base, alloc_conf) = match (&alloc.alloc_conf, &snap.allocator_settings) {
            (Some(c), _) => (AllocatorConfig::default(), c.text.clone()),
            (None, Some(s)) => (conf::from_snapshot(s), s.alloc_conf.clone()),
            (None, None) => (AllocatorConfig::default(), String::new()),
        };
        let mut notes = alloc.conf_notes();
        let mut config = alloc.over(base);
        config.capacity = Some(capacity);
        config.context_memory = self.settings.context_memory.unwrap_or(outside);
        let (torch, torch_from) = self.torch(snap);
        config
            .validate_for(torch.map(|r| r.asked))
            .with_context(|| format!("the card and settings: {}", card_words))?;
        let latest = KNOWN[KNOWN.len() - 1];
        let release = torch.map_or(latest, |r| r.release);
        let workspaces = match (plan.kind, torch) {
            (Kind::Recorded, Some(r)) => r.workspaces(self.settings.compute_capability),
            _ => WorkspaceRules::NONE,
        };
        if plan.kind == Kind::Gpu && self.settings.torch.is_some() {
            notes.push(
                "a GPU's trace holds its own cuBLAS workspaces: --torch sets only the error's \
                 words here, nothing is added"
                    .into(),
            );
        }
        if let Some(note) = torch.and_then(|r| r.note()) {
            notes.push(note);
        }
        let recorded_with = snap.recorder.as_ref().map(|r| r.torch.as_str());
        if let (Some(r), Some(with)) = (torch, recorded_with)
            && with.parse::<TorchVersion>().ok() != Some(r.asked)
        {
            notes.push(format!(
                "the tensors are those PyTorch {with} made when recording (its zero_grad() and \
                 optimizer loop); PyTorch {} sets only the workspaces and the error's words here",
                r.asked
            ));
        }
        if self.settings.compute_capability != DEFAULT_COMPUTE_CAPABILITY && plan.kind == Kind::Gpu
        {
            notes.push(
                "--compute-capability sizes workspaces, and a GPU's trace has its own".into(),
            );
        }
        Ok(Setup {
            card: ReplayCard {
                config,
                message: release.oom_message,
                exception: release.exception,
            },
            card_words,
            capacity,
            torch,
            torch_from,
            workspaces,
            alloc_conf,
            notes,
        })
    }
}

fn preset_name(p: Preset) -> &'static str {
    match p {
        Preset::Ideal => "ideal",
        Preset::Lesson => "lesson's",
    }
}

/// Everything one `memviz replay` found, for the text and the JSON.
#[derive(Debug)]
pub struct Replayed {
    pub file: PathBuf,
    pub plan: Plan,
    pub setup: Setup,
    pub added: workspaces::Added,
    pub outcome: Outcome,
    pub largest: Option<(Largest, usize)>,
    pub recorder_notes: Vec<String>,
    pub snapshot_path: Option<PathBuf>,
}

/// Reads, plans and replays as `cli` asks.
pub fn replay(cli: &Cli) -> Result<Replayed> {
    let out = cli::Output::new(cli.json);
    let bar = cli::progress(0, "reading", out);
    let snap = Snapshot::read_with_progress(&cli.file, &mut |at, total| {
        bar.set_length(total);
        bar.set_position(at);
    })?;
    bar.finish_and_clear();
    let device = source::device(&snap, cli.device)?;
    let mut plan = source::plan(&snap, device)?;
    let setup = cli.setup(&snap, &plan)?;
    let added = workspaces::add(&mut plan, setup.workspaces);
    let batch = match (cli.batch, plan.batch) {
        (Some(b), Some(rec)) if b != rec => {
            if let Some(why) = &plan.not_affine {
                bail!(
                    "--batch {b}: this trace was recorded at batch {rec} and its bytes are not \
                     affine in the batch ({why}); record it again at {b} \
                     (python pytorch/record.py TEMPLATE --batch {b})"
                );
            }
            b
        }
        (Some(b), None) => bail!(
            "--batch {b}: a GPU's trace holds the batch it ran with; only a trace recorded by \
             pytorch/record.py (with its affine form) can be asked another"
        ),
        (_, rec) => rec.unwrap_or(0),
    };
    if let Some(path) = &cli.memory_snapshot {
        check_writable(path)?;
    }
    let bar = cli::progress(plan.ops.len() as u64, "replaying", out);
    let outcome = engine::run(
        &plan,
        batch,
        &setup.card,
        cli.memory_snapshot.is_some(),
        &mut |at, _| bar.set_position(at as u64),
    )?;
    bar.finish_and_clear();
    if let (Some(path), Some(s)) = (&cli.memory_snapshot, &outcome.snapshot) {
        s.write(path)?;
    }
    let largest = if cli.largest_batch {
        let bar = cli::progress(0, "searching the largest batch", out);
        let found = largest::largest(&plan, &setup.card, &mut |runs, batch| {
            bar.set_position(runs as u64);
            bar.set_message(format!("searching the largest batch: trying {batch}"));
        })?;
        bar.finish_and_clear();
        Some(found)
    } else {
        None
    };
    let recorder_notes = snap.recorder.as_ref().map_or_else(Vec::new, |r| {
        let mut n: Vec<String> = r
            .not_in_trace
            .iter()
            .map(|t| format!("not in this trace: {t}"))
            .collect();
        // The workspaces and the host-side counters are the replay's own business (its
        // workspaces line and its cuda_host note say what it did): the rest still holds.
        n.extend(
            r.cuda_differences
                .iter()
                .filter(|t| !t.starts_with("cuBLAS workspaces") && !t.starts_with("Adam"))
                .map(|t| format!("on CUDA: {t}")),
        );
        n
    });
    Ok(Replayed {
        file: cli.file.clone(),
        plan,
        setup,
        added,
        outcome,
        largest,
        recorder_notes,
        snapshot_path: cli.memory_snapshot.clone(),
    })
}

/// Fails before the work when OUT cannot be written (its folder missing or read-only).
fn check_writable(path: &std::path::Path) -> Result<()> {
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
pub fn answer(cli: &Cli) -> Result<String> {
    let r = replay(cli)?;
    Ok(if cli.json {
        serde_json::to_string_pretty(&report::json(&r))? + "\n"
    } else {
        report::text(&r, cli.frames)
    })
}
