//! Challenge 4, the instructor's demo: take a setup that does not fit — by default Challenge 1's
//! full batch — and try every memory-saving strategy, alone and combined. Memory is planned at
//! full size on the `plan` backing; time, loss and accuracy are measured by executing the same
//! strategies on a sample of the data. Ends with the cheapest combination that fits, the
//! float32-vs-float64 comparison, and what mixed precision really saves.

mod flags;
pub mod strategies;

use clap::{CommandFactory, FromArgMatches};
use cli::{Output, SnapshotArgs, with_defaults};
use flags::Cli;
use gpumem::data::LESSON_TRAINING_EVENTS;
use gpumem::device::DeviceInfo;
use gpumem::estimate::StepSetup;
use gpumem::fit::CHEAPEST_RULE;
use gpumem::mlp::{MlpConfig, Strategy};
use gpumem::size::{MemorySpec, format_bytes};
use gpumem::{Backend, Device};
use serde_json::json;
use std::ffi::OsString;
use std::num::NonZeroU64;
use strategies::{Row, Timing};

/// Runs the demo with `args`, the program's name first (as `std::env::args_os()` gives them);
/// it prints through [`cli::Output`]. A command-line error (or `--help`) is returned as a
/// `clap::Error`, which [`cli::run_main`] prints and exits with.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<()> {
    let cmd = SnapshotArgs::describe(
        with_defaults(Cli::command(), &[("batch", "full")]),
        "the setup as given, no strategy on, one step planned on the card",
    );
    let cli = Cli::from_arg_matches(&cmd.try_get_matches_from(args)?)?;
    let out = Output::new(cli.json);
    cli.snapshot.check()?;
    let demo = Demo::open(&cli, out)?;
    let notes = demo.header();
    demo.snapshot()?;

    // Every strategy, alone and combined: memory at full size, time on the sample.
    let k = strategies::micro_batches(
        &demo.plan,
        demo.base(),
        demo.rows(),
        cli.precision,
        cli.accumulation,
        cli.checkpoint,
    )?;
    // The recommended combinations are rows too: timed beside what they are chosen over.
    let (mut table, cheapest) = strategies::table(
        &demo.plan,
        demo.base(),
        demo.rows(),
        cli.precision,
        k,
        cli.checkpoint,
    )?;
    let sample = demo.plan_and_time(&mut table)?;
    strategies::relative_times(&mut table);
    let equivalence = strategies::equivalence(&table);
    demo.print_memory(&table);
    if demo.timing_backend != Backend::Plan {
        demo.print_times(&table, &sample, &equivalence);
    }
    demo.print_cheapest(&cheapest)?;
    if demo.timing_backend != Backend::Plan {
        demo.print_fastest(&table, &cheapest);
    }

    // The sources' claims, measured.
    let (base, rows) = (demo.base(), demo.rows());
    let samples = cli.model.samples.get();
    let floats = strategies::float_comparison(&demo.plan, base, rows, samples)?;
    out.section("float32 against float64 (the field report: load features as float32)");
    out.table(
        &["term", "float32", "float64", "float64 / float32"],
        &floats.cells(),
    );
    out.line(floats.verdict());
    let mixed = strategies::mixed_comparison(&demo.plan, base, rows)?;
    out.section("What mixed precision really saves");
    out.table(
        &["term", "float32", "mixed", "mixed / float32"],
        &mixed.cells(),
    );
    out.line(mixed.verdict());

    let strategies::Cheapest {
        best,
        float32: best32,
    } = cheapest;
    out.json(&json!({
        "device": demo.opened,
        "card_bytes": demo.card,
        "memory_backend": Backend::Plan,
        "config": base,
        "batch": rows,
        "samples": cli.model.samples,
        "starting_precision": cli.precision,
        "accumulation_micro_batches": k,
        "checkpointing": cli.checkpoint,
        "memory_snapshot": cli.snapshot.memory_snapshot,
        "timing": {
            "backend": demo.timing_backend,
            "executed": demo.timing_backend != Backend::Plan,
            "samples": sample.rows,
            "epochs": sample.epochs,
            "batch": sample.batch_rows(),
        },
        "rows": table,
        "equivalence": equivalence,
        "cheapest": best.as_ref().map(|f| strategies::fit_json(f, base, rows)),
        "cheapest_float32": best32.as_ref().map(|f| strategies::fit_json(f, base, rows)),
        "cheapest_rule": CHEAPEST_RULE,
        "float32_vs_float64": floats,
        "mixed_precision": mixed,
        "notes": notes,
        "lesson_training_events": LESSON_TRAINING_EVENTS,
    }));
    Ok(())
}

/// What every part of the demo needs: the flags, the setup, the card and the backings.
struct Demo<'a> {
    cli: &'a Cli,
    out: Output,
    /// The network at its batch, as the flags made it.
    step: StepSetup,
    card: u64,
    notice: Option<String>,
    opened: DeviceInfo,
    timing_backend: Backend,
    plan: strategies::Planner,
}

impl<'a> Demo<'a> {
    /// The network as the flags made it, before any strategy.
    fn base(&self) -> &MlpConfig {
        self.step.config()
    }

    /// Rows per update.
    fn rows(&self) -> u64 {
        self.step.rows()
    }

    /// With `--memory-snapshot`: the setup as given (no strategy), one step planned on the
    /// card, its snapshot written.
    fn snapshot(&self) -> anyhow::Result<()> {
        let args = &self.cli.snapshot;
        if args.memory_snapshot.is_none() {
            return Ok(());
        }
        let device = Device::new(&args.options(self.plan.card()))?;
        gpumem::measure::measure_setup_on(&device, &self.step, self.cli.model.seed)?;
        if let Some(path) = args.write(&device)? {
            self.out.line(cli::snapshot_args::written_line(path));
        }
        Ok(())
    }

    fn open(cli: &'a Cli, out: Output) -> anyhow::Result<Demo<'a>> {
        let setup = cli.model.setup(&cli.device)?;
        let MemorySpec::Bytes(card) = cli.device.device_memory else {
            anyhow::bail!(
                "challenge4 plans every strategy at full size on the plan backing, which needs \
                 a card size: give --device-memory a size (e.g. 16GiB) instead of native"
            );
        };
        let opened = Device::new(&cli.device.options(cli.device.backend))?.info();
        Ok(Demo {
            cli,
            out,
            step: setup.step,
            card,
            notice: setup.notice,
            timing_backend: opened.backend,
            opened,
            plan: strategies::Planner::with_options(card, &cli.device.options(Backend::Plan)),
        })
    }

    /// The setup, where memory is planned and time measured; returns the notes it printed.
    fn header(&self) -> Vec<String> {
        let (cli, out, base) = (self.cli, self.out, self.base());
        out.line("Challenge 4 — fitting more on the card");
        out.line(format!(
            "device:  {} card; memory planned at full size on the plan backing",
            format_bytes(self.card)
        ));
        out.line(match self.timing_backend {
            Backend::Plan => "time:    not measured (the plan backing runs no kernels; use \
                              --backend cpu or wgpu)"
                .to_string(),
            b => format!(
                "time:    executed on the {b} backing ({}) on a sample of {} rows, {} epoch{}",
                self.opened.reason,
                cli.time_samples.min(cli.model.samples),
                cli.time_epochs,
                if cli.time_epochs == 1 { "" } else { "s" }
            ),
        });
        out.line(format!(
            "network: {} inputs → {} hidden layer(s) of {} (ReLU) → {} classes, {}, {} \
             parameters, starting from {}",
            base.inputs,
            base.layers,
            base.hidden,
            base.classes,
            base.optimizer,
            base.parameter_count(),
            cli.precision
        ));
        let whole = if self.rows() == cli.model.samples.get() {
            " (the whole training set)"
        } else {
            ""
        };
        out.line(format!("batch:   {} rows{whole}", self.rows()));
        if let Some(n) = &self.notice {
            out.line(format!("note:    {n}"));
        }
        let mut notes = Vec::new();
        if cli.time_samples > cli.model.samples {
            notes.push(format!(
                "--time-samples {} is more than the data set's {} rows; timing on all of them",
                cli.time_samples, cli.model.samples
            ));
        }
        for n in &notes {
            out.line(format!("note:    {n}"));
        }
        notes
    }

    /// Plans every row at full size and, on a backing that executes, times it on the sample
    /// (once per distinct effective strategy).
    fn plan_and_time(&self, table: &mut [Row]) -> anyhow::Result<strategies::Sample> {
        let cli = self.cli;
        let bar = cli::progress(table.len() as u64, "planning and timing", self.out);
        let sample = strategies::Sample::new(
            cli.time_samples.min(cli.model.samples),
            cli.model.batch,
            cli.time_epochs,
            cli.model.seed,
        );
        let timing = cli.device.options(self.timing_backend);
        let executes = self.timing_backend != Backend::Plan;
        if executes {
            // One untimed run first, so that the first row does not pay the process's warm-up.
            sample.warm_up(&timing, self.base());
        }
        let mut timed: Vec<(Strategy, Timing)> = Vec::new();
        for row in table.iter_mut() {
            row.plan(&self.plan, self.base(), self.rows())?;
            if executes {
                let key = row.effective(self.base());
                let t = match timed.iter().find(|(s, _)| *s == key) {
                    Some((_, t)) => t.clone(),
                    None => {
                        let t = sample.time(&timing, self.base(), key)?;
                        timed.push((key, t.clone()));
                        t
                    }
                };
                row.timing = Some(t);
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        Ok(sample)
    }

    fn print_memory(&self, table: &[Row]) {
        let out = self.out;
        out.section(&format!(
            "Memory of one update of {} rows (planned at full size on the plan backing)",
            self.rows()
        ));
        out.table(
            &[
                "strategy",
                "micro-batches × rows",
                "peak allocated",
                "fits?",
                "layers recomputed",
                "extra forward passes",
            ],
            &table.iter().map(Row::memory_cells).collect::<Vec<_>>(),
        );
        if let Some(oom) = table.first().and_then(|r| r.out_of_memory.as_ref()) {
            out.line(format!(
                "Without a strategy the update runs out of memory: {oom}."
            ));
        }
        out.line(
            "Accumulation runs the same rows in more, smaller passes: no extra arithmetic, but \
             the passes run one after another. Checkpointing computes the layers of every \
             checkpointed segment twice: the backward pass recomputes a segment whole.",
        );
        if table.iter().any(|r| !r.checkpointing_has_effect) {
            let layers = self.base().layers;
            out.line(format!(
                "* With {layers} hidden layer{}, checkpointing has nothing to drop (no layer lies \
                 between two checkpoints): these rows are the same step without it.",
                if layers == 1 { "" } else { "s" }
            ));
        }
    }

    fn print_times(
        &self,
        table: &[Row],
        sample: &strategies::Sample,
        equivalence: &strategies::Equivalence,
    ) {
        let out = self.out;
        out.section(&format!(
            "Time and learning on the sample (executed on {}: {} rows, {} epoch{}, batch {})",
            self.timing_backend,
            sample.rows,
            sample.epochs,
            if sample.epochs == 1 { "" } else { "s" },
            sample.batch_rows()
        ));
        out.table(
            &[
                "strategy",
                "time per epoch",
                "vs none",
                "validation loss",
                "validation accuracy",
            ],
            &table.iter().map(Row::time_cells).collect::<Vec<_>>(),
        );
        for line in equivalence.lines() {
            out.line(line);
        }
        out.line(
            "Measured on the sample, not at full size; compare the strategies with each other. \
             A debug build is many times slower than --release.",
        );
        if self.timing_backend == Backend::Cpu {
            out.line(
                "On the cpu backing mixed precision costs time instead of saving it: every \
                 float16 value is converted in software when a kernel loads or stores it. A GPU \
                 with 16-bit support converts in hardware, and many multiply 16-bit values \
                 faster.",
            );
        }
    }

    /// The rule's cheapest against the measurement: the fastest row that fits, on this backing.
    fn print_fastest(&self, table: &[Row], cheapest: &strategies::Cheapest) {
        let line = strategies::fastest_line(table, cheapest, self.base(), self.timing_backend);
        if let Some(line) = line {
            self.out.line(format!("  {line}"));
        }
    }

    fn print_cheapest(&self, cheapest: &strategies::Cheapest) -> anyhow::Result<()> {
        let (out, base, rows) = (self.out, self.base(), self.rows());
        out.section("The cheapest combination that fits");
        out.line(format!("\"Cheapest\": {CHEAPEST_RULE}."));
        match &cheapest.best {
            Some(f) => {
                out.line(format!(
                    "→ {}: peak {} of the {} card.",
                    strategies::describe(&f.strategy, base, rows),
                    format_bytes(f.memory.peak_allocated),
                    format_bytes(self.card)
                ));
                let other = cheapest.float32.as_ref();
                if let Some(f32) = other.filter(|b| b.strategy != f.strategy) {
                    out.line(format!(
                        "  Keeping float32 (the plain step's numbers): {}: peak {}.",
                        strategies::describe(&f32.strategy, base, rows),
                        format_bytes(f32.memory.peak_allocated)
                    ));
                }
            }
            None => out.line(format!(
                "Nothing fits: even one row per micro-batch with every strategy runs out. The \
                 model itself — parameters, gradients and optimizer state, {} — must shrink, or \
                 be split across cards (model parallelism).",
                format_bytes(
                    StepSetup::new(base.clone(), NonZeroU64::MIN)?
                        .estimate()
                        .persistent()
                )
            )),
        }
        Ok(())
    }
}
