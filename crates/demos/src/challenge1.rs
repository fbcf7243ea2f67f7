//! Challenge 1, the instructor's demo: train a few steps at batch 32 to show the network
//! works, then try the whole training set as one batch — and watch the card run out.

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser};
use cli::{DeviceArgs, ModelArgs, Output, SnapshotArgs, with_defaults};
use gpumem::data::Dataset;
use gpumem::device::DeviceInfo;
use gpumem::estimate::{Estimate, StepSetup};
use gpumem::measure::{StepMemory, largest_batch, measure_setup_on};
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::size::{MemorySpec, format_bytes};
use gpumem::{Backend, Device};
use serde_json::json;
use std::ffi::OsString;

/// Take the network with hidden size 2000 and use the whole training set as one batch.
#[derive(Debug, Parser)]
#[command(name = "challenge1", version)]
struct Cli {
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Training steps at the lesson's batch size (32) before the big attempt.
    #[arg(long, value_name = "N", default_value = "5")]
    warmup_steps: u64,
    #[command(flatten)]
    snapshot: SnapshotArgs,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
}

/// The batch size the lesson trains with.
const LESSON_BATCH: u64 = 32;

/// Runs the demo with `args`, the program's name first (as `std::env::args_os()` gives them);
/// it prints through [`cli::Output`]. A command-line error (or `--help`) is returned as a
/// `clap::Error`, which [`cli::run_main`] prints and exits with.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<()> {
    let cmd = SnapshotArgs::describe(
        with_defaults(Cli::command(), &[("batch", "full")]),
        "the one step of the big batch, on the backing it runs on",
    );
    let cli = Cli::from_arg_matches(&cmd.try_get_matches_from(args)?)?;
    let out = Output::new(cli.json);
    let setup = cli.model.setup(&cli.device)?;
    let config = setup.step.config();
    cli.snapshot.check()?;

    let device = Device::new(&cli.device.options(cli.device.backend))?;
    let info = device.info();
    out.line("Challenge 1 — the whole training set as one batch");
    out.line(cli::device_line(&info));
    out.line(cli.device.card_line());
    out.line(format!(
        "network: {} inputs → {} hidden layer(s) of {} (ReLU) → {} classes, {}, {} parameters",
        config.inputs,
        config.layers,
        config.hidden,
        config.classes,
        config.optimizer,
        config.parameter_count()
    ));

    // 1. A few ordinary steps, to show the network trains.
    let warmup = warmup(&device, &cli, config, &out)?;

    // 2. The whole training set as one batch.
    if let Some(n) = &setup.notice {
        out.line(format!("note: {n}"));
    }
    let full = full_batch(&cli, &info, &setup.step, &out)?;
    out.json(&json!({
        "device": info,
        "card": cli.device.card,
        "config": config,
        "warmup": warmup,
        "attempt": {
            "rows": setup.step.rows(),
            "backend": full.backend,
            "executed": full.attempt.executed,
            "estimate": full.estimate,
            "measured": full.attempt,
            "out_of_memory_message": full.attempt.oom.as_ref().map(|o| o.to_string()),
        },
        "largest_batch_that_fits": full.largest,
        "memory_snapshot": cli.snapshot.memory_snapshot,
    }));
    Ok(())
}

/// What the full-batch attempt planned or ran, and what fits instead.
struct FullBatch {
    backend: Backend,
    estimate: Estimate,
    attempt: StepMemory,
    largest: Option<u64>,
}

/// One step of `setup` — on the plan backing unless the card is small enough to execute —
/// with the equation beside it, and on out-of-memory the largest batch that fits.
fn full_batch(
    cli: &Cli,
    info: &DeviceInfo,
    setup: &StepSetup,
    out: &Output,
) -> anyhow::Result<FullBatch> {
    let (config, rows) = (setup.config(), setup.rows());
    let (heavy, why) =
        cli::args::heavy_backend(cli.device.backend, info.backend, cli.device.device_memory);
    let heavy_options = cli.device.options(heavy);
    let whole = if rows >= cli.model.samples.get() {
        " (the whole training set)"
    } else {
        ""
    };
    out.section(&format!("One batch of {rows} rows{whole}"));
    match &why {
        Some(why) => out.line(format!("backing: {why}")),
        None if heavy == Backend::Plan => {
            out.line("backing: plan — planned: every allocation made, no kernel run")
        }
        None => out.line(format!("backing: {heavy}, executed")),
    }
    let e = setup.estimate_on(heavy_options.cublas);
    out.line("What one training step needs, by the memory equation (gpumem::estimate):");
    let category_rows: Vec<Vec<String>> = e
        .categories()
        .into_iter()
        .chain([("peak allocated", e.peak_allocated)])
        .map(|(name, b)| vec![name.to_string(), format_bytes(b)])
        .collect();
    out.table(&["category", "bytes"], &category_rows);

    let device = Device::new(&cli.snapshot.options(heavy_options.clone()))
        .context("running the full batch")?;
    let attempt =
        measure_setup_on(&device, setup, cli.model.seed).context("running the full batch")?;
    // Written before anything else can fail: an out-of-memory is when it is wanted.
    if let Some(path) = cli.snapshot.write(&device)? {
        out.line(cli::snapshot_args::written_line(path));
    }
    let mut largest = None;
    match &attempt.oom {
        None => out.line(format!(
            "\nIt fits: peak allocated {}, peak reserved {} of {}.",
            format_bytes(attempt.peak_allocated),
            format_bytes(attempt.peak_reserved),
            info.memory
        )),
        Some(oom) => {
            if attempt.failed_in == Some(gpumem::measure::Phase::Model) {
                anyhow::bail!(
                    "the model alone does not fit on this card, before any batch:\n{oom}"
                );
            }
            let pass = attempt
                .failed_in
                .map_or(String::new(), |p| format!(" in the {p}"));
            out.line(format!(
                "\nThe engine ran out of memory{pass}, while allocating `{}`:\n",
                oom.label
            ));
            out.line(oom.to_string());
            // Search on plan (cheap and identical in memory) unless the card is native.
            let search_options = match cli.device.device_memory {
                MemorySpec::Native => heavy_options.clone(),
                MemorySpec::Bytes(_) => cli.device.options(Backend::Plan),
            };
            let search = largest_batch(&search_options, config, rows)?;
            largest = search.best;
            out.line(match search.best {
                Some(b) => format!(
                    "\nWhat fits instead: the largest batch whose step fits this card is {b} rows \
                     (found by the engine in {} planned steps).",
                    search.attempts.len()
                ),
                None => "\nNot even a batch of one row fits.".to_string(),
            });
        }
    }
    Ok(FullBatch {
        backend: heavy,
        estimate: e,
        attempt,
        largest,
    })
}

/// Trains `--warmup-steps` steps of `config` at batch 32 on the opened device.
fn warmup(
    device: &Device,
    cli: &Cli,
    config: &MlpConfig,
    out: &Output,
) -> anyhow::Result<serde_json::Value> {
    let info = device.info();
    let steps = cli.warmup_steps;
    let done = if info.executes {
        "executed"
    } else {
        "planned, not executed"
    };
    let mut mlp = Mlp::new(device, config, cli.model.seed).context("building the network")?;
    let data = Dataset::generate((steps * LESSON_BATCH).max(1), cli.model.seed).train;
    let mut losses = Vec::new();
    for step in 0..steps {
        let start = (step * LESSON_BATCH) as usize;
        let indices: Vec<usize> = (start..start + LESSON_BATCH as usize).collect();
        let part = data.gather(&indices);
        let batch = if info.executes {
            Batch::Data(&part)
        } else {
            Batch::Planned(LESSON_BATCH)
        };
        losses.push(mlp.train_step(batch)?.loss);
    }
    // Planned steps compute nothing: no loss to show.
    let loss = match (losses.first(), losses.last()) {
        (Some(Some(a)), Some(Some(b))) => format!("loss {a:.4} → {b:.4}, "),
        _ => String::new(),
    };
    out.line(format!(
        "\n{steps} training steps at batch {LESSON_BATCH} ({done} on {}): {loss}peak allocated \
         {}, reserved {}.",
        info.backend,
        format_bytes(device.max_memory_allocated()),
        format_bytes(device.memory_reserved()),
    ));
    Ok(json!({
        "steps": steps,
        "batch": LESSON_BATCH,
        "executed": info.executes,
        "losses": losses,
        "peak_allocated": device.max_memory_allocated(),
        "peak_reserved": device.max_memory_reserved(),
    }))
}
