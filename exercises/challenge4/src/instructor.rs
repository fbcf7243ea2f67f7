//! Challenge 4, the instructor's demo: take a setup that does not fit — by default Challenge 1's
//! full batch — and try every memory-saving strategy, alone and combined. Memory is planned at
//! full size on the `plan` backing; time, loss and accuracy are measured by executing the same
//! strategies on a sample of the data. Ends with the cheapest combination that fits, the
//! float32-vs-float64 comparison, and what mixed precision really saves.

use crate::strategies::{self, Accumulation, Row, Timing};
use clap::{CommandFactory, FromArgMatches, Parser};
use demo::{DeviceArgs, ModelArgs, Output, with_defaults};
use gpumem::data::LESSON_TRAINING_EVENTS;
use gpumem::fit::CHEAPEST_RULE;
use gpumem::mlp::{Checkpointing, Precision};
use gpumem::size::{MemorySpec, format_bytes};
use gpumem::{Backend, Device};
use serde_json::json;
use std::ffi::OsString;

/// Make a setup that does not fit the card fit it: mixed precision, gradient accumulation,
/// activation checkpointing and float32 instead of float64, alone and combined — their peak
/// memory at full size, their time and accuracy on a sample, and the cheapest that fits.
#[derive(Debug, Parser)]
#[command(name = "challenge4", version)]
struct Cli {
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// The precision the setup starts from: float32, or float64 (NumPy's default, the field
    /// report's case). Mixed precision is one of the strategies the demo tries.
    #[arg(long, value_name = "P", default_value = "float32", value_parser = parse_precision)]
    precision: Precision,
    /// Micro-batches per update in the rows that accumulate gradients: a number, or `auto`
    /// for the fewest with which accumulation alone fits the card (at least 2).
    #[arg(long, value_name = "K|auto", default_value = "auto", value_parser = parse_accumulation, allow_hyphen_values = true)]
    accumulation: Accumulation,
    /// Hidden layers per checkpoint segment in the rows that checkpoint: a number, or `sqrt`
    /// for ⌈√layers⌉.
    #[arg(long, value_name = "K|sqrt", default_value = "sqrt", value_parser = parse_checkpoint, allow_hyphen_values = true)]
    checkpoint: Checkpointing,
    /// Rows of the synthetic data the timing runs train on (the full size would need tens of
    /// GiB of host memory on the cpu backing). Debug builds are slow: for realistic timings
    /// use `cargo run --release -p challenge4 -- --time-samples 20000`.
    #[arg(long, value_name = "N", default_value = "256", value_parser = demo::args::parse_positive, allow_hyphen_values = true)]
    time_samples: u64,
    /// Epochs each timing run trains on the sample.
    #[arg(long, value_name = "N", default_value = "1", value_parser = parse_epochs, allow_hyphen_values = true)]
    time_epochs: u64,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
}

fn parse_precision(s: &str) -> Result<Precision, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "float32" | "f32" => Ok(Precision::Float32),
        "float64" | "f64" => Ok(Precision::Float64),
        "mixed" | "float16" | "f16" => Err(
            "the setup starts from float32 or float64; mixed precision is one of the strategies \
             the demo tries on it"
                .into(),
        ),
        _ => Err(format!(
            "`{s}` is not a precision: expected float32 or float64"
        )),
    }
}

fn parse_accumulation(s: &str) -> Result<Accumulation, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(Accumulation::Auto);
    }
    demo::args::parse_positive(s)
        .map(Accumulation::Steps)
        .map_err(|e| format!("micro-batches {e} (or `auto`)"))
}

fn parse_checkpoint(s: &str) -> Result<Checkpointing, String> {
    if s.trim().eq_ignore_ascii_case("sqrt") {
        return Ok(Checkpointing::Sqrt);
    }
    demo::args::parse_positive(s)
        .map(Checkpointing::Every)
        .map_err(|e| format!("layers per segment {e} (or `sqrt`)"))
}

fn parse_epochs(s: &str) -> Result<u64, String> {
    let n = demo::args::parse_positive(s)?;
    if n > 1000 {
        return Err(format!("at most 1000 timing epochs, got {n}"));
    }
    Ok(n)
}

/// Runs the demo with `args`, the program's name first (as `std::env::args_os()` gives them);
/// it prints through [`demo::Output`]. A command-line error (or `--help`) is returned as a
/// `clap::Error`, which [`demo::run_main`] prints and exits with.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<()> {
    let cmd = with_defaults(Cli::command(), &[("batch", "full")]);
    let cli = Cli::from_arg_matches(&cmd.try_get_matches_from(args)?)?;
    let out = Output::new(cli.json);
    let base = cli.model.config();
    base.validate()?;
    let MemorySpec::Bytes(card) = cli.device.device_memory else {
        anyhow::bail!(
            "challenge4 plans every strategy at full size on the plan backing, which needs a \
             card size: give --device-memory a size (e.g. 16GiB) instead of native"
        );
    };
    let (rows, notice) = cli.model.batch_rows();
    let opened = Device::new(&cli.device.options(cli.device.backend))?.info();
    let timing_backend = opened.backend;

    out.line("Challenge 4 — fitting more on the card");
    out.line(format!(
        "device:  {} card; memory planned at full size on the plan backing",
        format_bytes(card)
    ));
    out.line(match timing_backend {
        Backend::Plan => {
            "time:    not measured (the plan backing runs no kernels; use --backend cpu or wgpu)"
                .to_string()
        }
        b => format!(
            "time:    executed on the {b} backing ({}) on a sample of {} rows, {} epoch{}",
            opened.reason,
            cli.time_samples.min(cli.model.samples),
            cli.time_epochs,
            if cli.time_epochs == 1 { "" } else { "s" }
        ),
    });
    out.line(format!(
        "network: {} inputs → {} hidden layer(s) of {} (ReLU) → {} classes, {}, {} parameters, starting from {}",
        base.inputs,
        base.layers,
        base.hidden,
        base.classes,
        base.optimizer,
        base.parameter_count(),
        cli.precision
    ));
    out.line(format!(
        "batch:   {rows} rows{}",
        if rows == cli.model.samples {
            " (the whole training set)"
        } else {
            ""
        }
    ));
    if let Some(n) = notice {
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

    // Every strategy, alone and combined: memory at full size.
    let plan = strategies::Planner::new(card);
    let k = strategies::micro_batches(
        &plan,
        &base,
        rows,
        cli.precision,
        cli.accumulation,
        cli.checkpoint,
    )?;
    let mut table = strategies::rows(&base, cli.precision, k, cli.checkpoint);
    let bar = demo::progress(table.len() as u64, "planning and timing", out);
    let sample = strategies::Sample::new(
        cli.time_samples.min(cli.model.samples),
        cli.model.batch,
        cli.time_epochs,
        cli.model.seed,
    );
    if timing_backend != Backend::Plan {
        // One untimed run first, so that the first row does not pay the process's warm-up.
        sample.warm_up(&cli.device.options(timing_backend), &base);
    }
    let mut timed: Vec<(gpumem::mlp::Strategy, Timing)> = Vec::new();
    for row in &mut table {
        row.plan(&plan, &base, rows)?;
        if timing_backend != Backend::Plan {
            let key = row.effective(&base);
            let timing = match timed.iter().find(|(s, _)| *s == key) {
                Some((_, t)) => t.clone(),
                None => {
                    let t = sample.time(&cli.device.options(timing_backend), &base, key)?;
                    timed.push((key, t.clone()));
                    t
                }
            };
            row.timing = Some(timing);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    strategies::relative_times(&mut table);
    let equivalence = strategies::equivalence(&table);

    out.section(&format!(
        "Memory of one update of {rows} rows (planned at full size on the plan backing)"
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
        "Accumulation runs the same rows in more, smaller passes: no extra arithmetic, but the \
         passes run one after another. Checkpointing computes the recomputed layers twice.",
    );
    if table.iter().any(|r| !r.checkpointing_has_effect) {
        out.line(format!(
            "* With {} hidden layer{}, checkpointing has nothing to drop (no layer lies between \
             two checkpoints): these rows are the same step without it.",
            base.layers,
            if base.layers == 1 { "" } else { "s" }
        ));
    }
    if timing_backend != Backend::Plan {
        out.section(&format!(
            "Time and learning on the sample (executed on {timing_backend}: {} rows, {} epoch{}, batch {})",
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
        if timing_backend == Backend::Cpu {
            out.line(
                "On the cpu backing mixed precision costs time instead of saving it: every \
                 float16 value is converted in software when a kernel loads or stores it. A GPU with \
                 16-bit support converts in hardware, and many multiply 16-bit values faster.",
            );
        }
    }

    // The cheapest that fits.
    let strategies::Cheapest {
        best,
        float32: best32,
    } = strategies::cheapest(&plan, &base, rows, cli.checkpoint)?;
    out.section("The cheapest combination that fits");
    out.line(format!("\"Cheapest\": {CHEAPEST_RULE}."));
    match &best {
        Some(f) => {
            out.line(format!(
                "→ {}: peak {} of the {} card.",
                strategies::describe(&f.strategy, &base, rows),
                format_bytes(f.memory.peak_allocated),
                format_bytes(card)
            ));
            if let Some(f32) = best32.as_ref().filter(|b| b.strategy != f.strategy) {
                out.line(format!(
                    "  Keeping float32 (the plain step's numbers): {}: peak {}.",
                    strategies::describe(&f32.strategy, &base, rows),
                    format_bytes(f32.memory.peak_allocated)
                ));
            }
        }
        None => out.line(format!(
            "Nothing fits: even one row per micro-batch with every strategy runs out. The model \
             itself — parameters, gradients and optimizer state, {} — must shrink, or be split \
             across cards (model parallelism).",
            format_bytes(gpumem::estimate::estimate(&base, 1)?.persistent())
        )),
    }

    // The sources' claims, measured.
    let floats = strategies::float_comparison(&plan, &base, rows, cli.model.samples)?;
    out.section("float32 against float64 (the field report: load features as float32)");
    out.table(
        &["term", "float32", "float64", "float64 / float32"],
        &floats.cells(),
    );
    out.line(floats.verdict());
    let mixed = strategies::mixed_comparison(&plan, &base, rows)?;
    out.section("What mixed precision really saves");
    out.table(
        &["term", "float32", "mixed", "mixed / float32"],
        &mixed.cells(),
    );
    out.line(mixed.verdict());

    out.json(&json!({
        "device": opened,
        "card_bytes": card,
        "memory_backend": Backend::Plan,
        "config": base,
        "batch": rows,
        "samples": cli.model.samples,
        "starting_precision": cli.precision,
        "accumulation_micro_batches": k,
        "checkpointing": cli.checkpoint,
        "timing": {
            "backend": timing_backend,
            "executed": timing_backend != Backend::Plan,
            "samples": sample.rows,
            "epochs": sample.epochs,
            "batch": sample.batch_rows(),
        },
        "rows": table,
        "equivalence": equivalence,
        "cheapest": best.as_ref().map(|f| strategies::fit_json(f, &base, rows)),
        "cheapest_float32": best32.as_ref().map(|f| strategies::fit_json(f, &base, rows)),
        "cheapest_rule": CHEAPEST_RULE,
        "float32_vs_float64": floats,
        "mixed_precision": mixed,
        "notes": notes,
        "lesson_training_events": LESSON_TRAINING_EVENTS,
    }));
    Ok(())
}
