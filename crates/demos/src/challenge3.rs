//! Challenge 3, the instructor's demo: watch allocated and reserved memory while the
//! lesson's network trains, then see the two ways a run dies "after a few epochs" — a loop
//! that keeps every step's outputs (a leak), and a cache fragmented by a short last batch —
//! and what each of the allocator's settings does about the second.
//!
//! [`Setup`] is the demo's settings after each scenario's defaults, [`run`] the whole demo.

pub mod fragmentation;
pub mod leak;
pub mod runner;
mod watch;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use cli::{AllocatorArgs, DeviceArgs, ModelArgs, Output, SnapshotArgs, with_defaults};
use gpumem::estimate::StepSetup;
use gpumem::size::MemorySpec;
use gpumem::{Backend, Device, DeviceOptions};
use std::ffi::OsString;
use std::num::NonZeroU64;
use std::path::PathBuf;

/// Watch memory while training: allocated vs reserved, the timeline, a leak, and a
/// fragmented cache with the allocator's settings that avoid it.
#[derive(Debug, Parser)]
#[command(name = "challenge3", version)]
struct Cli {
    /// train: a few epochs with allocated, reserved and peaks per epoch, a memory summary and
    /// a timeline. leak: a loop that keeps every step's outputs runs out of memory after some
    /// epochs; the fixed loop on the same card stays flat (defaults --batch 32 --samples 20000
    /// --epochs 8 --device-memory 4MiB). fragmentation: a short last batch whose kept outputs
    /// pin a cached segment, so epoch 2 fails although enough memory is cached; then each
    /// remedy (defaults --hidden 700 --layers 2 --batch 132000 --samples 395600 --epochs 2
    /// --device-memory 1600MiB). Flags given on the command line override these.
    #[arg(long, value_enum, default_value = "train")]
    scenario: Scenario,
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    snapshot: SnapshotArgs,
    /// Epochs to train.
    #[arg(long, value_name = "N", default_value = "3", value_parser = cli::args::parse_positive)]
    epochs: u64,
    /// Where to write the timeline chart (SVG) of allocated and reserved bytes.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "target/challenge3-timeline.svg"
    )]
    out: PathBuf,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
}

/// What the demo shows (`--scenario`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Train,
    Leak,
    Fragmentation,
}

/// A scenario's own defaults for the flags the user did not give.
struct Defaults {
    card: &'static str,
    hidden: u64,
    layers: u64,
    batch: NonZeroU64,
    samples: NonZeroU64,
    epochs: u64,
}

/// `n` rows, at least one: checked when the program is compiled.
const fn rows(n: u64) -> NonZeroU64 {
    match NonZeroU64::new(n) {
        Some(rows) => rows,
        None => panic!("a scenario's rows must be at least 1"),
    }
}

impl Scenario {
    /// The scenario's settings on the `plan` backing, as `cargo run -p challenge3 --
    /// --scenario NAME --backend plan` runs it: every other flag at the scenario's default.
    pub fn planned(self) -> anyhow::Result<Setup> {
        let name = self
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        Setup::from_args(["challenge3", "--scenario", &name, "--backend", "plan"])
    }

    fn defaults(self) -> Defaults {
        match self {
            // The lesson's network at its batch size on the lesson's card.
            Scenario::Train => Defaults {
                card: gpumem::lesson::CARD_ARG,
                hidden: 2000,
                layers: 1,
                batch: const { rows(32) },
                samples: const { rows(2000) },
                epochs: 3,
            },
            // The lesson's network; a card the flat loop fits with room to spare, which the
            // leak (1 KiB a step at batch 32) fills within a few epochs.
            Scenario::Leak => Defaults {
                card: "4MiB",
                hidden: 2000,
                layers: 1,
                batch: const { rows(32) },
                samples: const { rows(20_000) },
                epochs: 8,
            },
            // Inputs chosen to show the failure: batches of 132 000 rows and a last one of
            // 131 600. The short batch's activations are carved out of the full batches'
            // cached segments, leaving at the end of one a piece just large enough for its
            // `y_pred`; the loop keeps that, pinning the segment into epoch 2, whose first
            // step then needs one segment more than the card has room for. The card is the
            // four activation-sized segments a step uses, the small ones, and some room to
            // spare — less than a fifth segment.
            Scenario::Fragmentation => Defaults {
                card: "1600MiB",
                hidden: 700,
                layers: 2,
                batch: const { rows(132_000) },
                samples: const { rows(395_600) },
                epochs: 2,
            },
        }
    }
}

/// The settings a scenario runs with, after its defaults.
#[derive(Debug)]
pub struct Setup {
    pub scenario: Scenario,
    /// `--json`: one JSON document instead of tables.
    pub json: bool,
    pub device: DeviceArgs,
    pub model: ModelArgs,
    /// The network at its batch, as the flags and the scenario's defaults make it, checked.
    pub step: StepSetup,
    pub allocator: AllocatorArgs,
    /// `--memory-snapshot`: written by [`write_timeline`] for the run it draws.
    pub snapshot: SnapshotArgs,
    pub epochs: u64,
    pub out: PathBuf,
    /// The backing the runs use (`auto` resolved), and why, when it differs from the one
    /// that was asked for.
    pub backend: Backend,
    pub why: Option<String>,
    pub opened: gpumem::device::DeviceInfo,
}

impl Setup {
    /// The demo's settings for a command line (the program's name first): flags not given
    /// take the scenario's defaults, and the backing is chosen as the demo chooses it (a
    /// device is opened to see what `auto` finds).
    pub fn from_args(
        args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    ) -> anyhow::Result<Setup> {
        let cmd = with_defaults(
            Cli::command(),
            &[
                ("samples", "2000"),
                ("device_memory", gpumem::lesson::CARD_ARG),
            ],
        );
        let cmd = SnapshotArgs::describe(
            cmd,
            "the run the timeline draws: train's run, leak's leaking loop, fragmentation's run \
             with the given allocator settings",
        );
        let matches = cmd.try_get_matches_from(args)?;
        let cli = Cli::from_arg_matches(&matches)?;
        Setup::new(cli, &matches)
    }

    fn new(mut cli: Cli, matches: &ArgMatches) -> anyhow::Result<Setup> {
        let d = cli.scenario.defaults();
        if !given(matches, "device_memory") {
            cli.device.device_memory = d.card.parse().map_err(anyhow::Error::msg)?;
        }
        let model = &mut cli.model;
        default_unless_given(matches, "hidden", &mut model.hidden, d.hidden);
        default_unless_given(matches, "layers", &mut model.layers, d.layers);
        default_unless_given(matches, "samples", &mut model.samples, d.samples);
        default_unless_given(matches, "epochs", &mut cli.epochs, d.epochs);
        let batch = gpumem::train::BatchSize::Rows(d.batch);
        default_unless_given(matches, "batch", &mut model.batch, batch);
        let step = cli.model.setup(&cli.device)?.step;
        cli.snapshot.check()?;
        let probe = DeviceOptions {
            allocator: cli.device.settings.allocator.config(),
            ..cli.device.options(cli.device.backend)
        };
        let opened = Device::new(&probe)?.info();
        // The fragmentation runs need gigabytes: planned unless a hardware GPU or an explicit
        // backing was asked for. The others are small enough to execute on the cpu.
        let (backend, why) = match cli.scenario {
            Scenario::Fragmentation => cli::args::heavy_backend(
                cli.device.backend,
                opened.backend,
                cli.device.device_memory,
            ),
            // Thousands of steps: quick on a GPU or planned, a few minutes of cpu kernels.
            Scenario::Leak => match (cli.device.backend, opened.backend) {
                (Backend::Auto, Backend::Cpu) => (
                    Backend::Plan,
                    Some(
                        "planned on the plan backing: no hardware GPU was found, and executing \
                         thousands of steps twice on the cpu takes minutes (--backend cpu does it)"
                            .to_string(),
                    ),
                ),
                (_, b) => (b, None),
            },
            Scenario::Train => (opened.backend, None),
        };
        Ok(Setup {
            scenario: cli.scenario,
            json: cli.json,
            allocator: cli.device.settings.allocator.clone(),
            snapshot: cli.snapshot,
            device: cli.device,
            model: cli.model,
            step,
            epochs: cli.epochs,
            out: cli.out,
            backend,
            why,
            opened,
        })
    }

    /// Device options for a run, with `allocator` settings (recording the allocator's
    /// history when a snapshot is asked).
    pub fn options(&self, allocator: gpumem::alloc::AllocatorConfig) -> DeviceOptions {
        self.snapshot.options(DeviceOptions {
            allocator,
            ..self.device.options(self.backend)
        })
    }

    /// Rows per batch, clamped to the training set.
    pub fn batch(&self) -> u64 {
        self.step.rows()
    }

    pub fn card(&self) -> Option<u64> {
        match self.device.device_memory {
            MemorySpec::Bytes(b) => Some(b),
            MemorySpec::Native => None,
        }
    }

    /// Prints where the runs happen.
    pub fn header(&self, out: Output, title: &str) {
        out.line(format!("Challenge 3 — {title}"));
        out.line(format!(
            "device:  {} backing ({}), {} card",
            self.backend, self.opened.reason, self.device.device_memory
        ));
        if let Some(why) = &self.why {
            out.line(format!("runs:    {why}"));
        }
        out.line(format!(
            "steps:   {}",
            if self.backend == Backend::Plan {
                "planned: every allocation is made, no kernel runs (no losses)"
            } else {
                "executed: kernels run, losses are real"
            }
        ));
        let c = self.step.config();
        out.line(format!(
            "network: {} inputs → {} hidden layer(s) of {} → {} classes, {}, batch {}, {} samples, {} epochs",
            c.inputs,
            c.layers,
            c.hidden,
            c.classes,
            c.optimizer,
            self.batch(),
            self.model.samples,
            self.epochs
        ));
        out.line(format!("allocator: {}", self.allocator.describe()));
        for note in cli::alloc_args::notes(&self.allocator.config()) {
            out.line(note);
        }
    }
}

/// Whether the user gave flag `id` (rather than clap filling in its default).
fn given(m: &ArgMatches, id: &str) -> bool {
    m.value_source(id) == Some(ValueSource::CommandLine)
}

/// Sets `value` to the scenario's `default` unless the user gave flag `id`.
fn default_unless_given<T>(m: &ArgMatches, id: &str, value: &mut T, default: T) {
    if !given(m, id) {
        *value = default;
    }
}

/// Runs the demo with `args`, the program's name first (as `std::env::args_os()` gives them);
/// it prints through [`cli::Output`]. A command-line error (or `--help`) is returned as a
/// `clap::Error`, which [`cli::run_main`] prints and exits with.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<()> {
    let setup = Setup::from_args(args)?;
    let out = Output::new(setup.json);
    match setup.scenario {
        Scenario::Train => watch::run(&setup, out),
        Scenario::Leak => leak::run(&setup, out),
        Scenario::Fragmentation => fragmentation::run(&setup, out),
    }
}

/// Writes the run's timeline to `setup.out` and returns the path written; with
/// `--memory-snapshot`, writes the run's snapshot too (the demos draw their headline run).
pub fn write_timeline(
    setup: &Setup,
    result: &runner::RunResult,
    title: &str,
) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let alt = format!(
        "Step chart of allocated and reserved memory after each of {} allocator events ({title}): \
         peak allocated {}, peak reserved {}{}.",
        result.trace.events.len(),
        gpumem::size::format_bytes(result.trace.peak_allocated()),
        gpumem::size::format_bytes(result.trace.peak_reserved()),
        setup.card().map_or(String::new(), |c| format!(
            ", on a card of {}",
            gpumem::size::format_bytes(c)
        ))
    );
    let svg = charts::timeline_svg(&charts::TimelineChart {
        trace: &result.trace,
        capacity: setup.card(),
        title,
        alt: &alt,
        phases: &result.phases,
    })?;
    if let Some(dir) = setup.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    std::fs::write(&setup.out, svg)
        .with_context(|| format!("cannot write the timeline to {}", setup.out.display()))?;
    if let Some(snapshot) = &result.snapshot
        && let Some(path) = setup.snapshot.write_snapshot(snapshot)?
    {
        Output::new(setup.json).line(cli::snapshot_args::written_line(path));
    }
    Ok(setup.out.clone())
}
