//! Challenge 2, the instructor's demo: at batch 32, add hidden layers of width 5000 until
//! the card runs out, and compare with the lesson's "typically 5 hidden layers".

use clap::{CommandFactory, FromArgMatches, Parser};
use cli::{DeviceArgs, ModelArgs, Output, SnapshotArgs, with_defaults};
use gpumem::estimate::{StepSetup, deepest_that_fits};
use gpumem::measure::{Search, StepMemory, measure_setup, measure_setup_on, search_largest};
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use gpumem::{Device, DeviceOptions};
use serde_json::json;
use std::ffi::OsString;
use std::num::NonZeroU64;

/// By adding hidden layers, find how deep the network can be before it runs out of memory
/// at batch size 32.
#[derive(Debug, Parser)]
#[command(name = "challenge2", version)]
struct Cli {
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    snapshot: SnapshotArgs,
    /// Also print what one more layer adds, term by term, and the lesson's "about 5 layers"
    /// compared with this card (`--json` always has both).
    #[arg(long)]
    explain: bool,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
}

/// The lesson's remark: "typically … a network with 5 hidden layers, each containing 5000
/// neurons".
const LESSON_LAYERS: u64 = 5;

/// Runs the demo with `args`, the program's name first (as `std::env::args_os()` gives them);
/// it prints through [`cli::Output`]. A command-line error (or `--help`) is returned as a
/// `clap::Error`, which [`cli::run_main`] prints and exits with.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<()> {
    // The learning rate stays the flags' default, 0.001, the lesson's loop's as the book shows
    // it (`lesson_loop.py`): memory does not depend on it, but the demo should not contradict
    // the page.
    let cmd = with_defaults(Cli::command(), &[("hidden", "5000"), ("layers", "4096")])
        .mut_arg("layers", |a| {
            a.help("The deepest network to try (the demo searches up to it)")
        });
    let cmd = SnapshotArgs::describe(
        cmd,
        "the shallowest depth that runs out of memory, its step run once more after the \
         search; the deepest tried when every depth fits",
    );
    let cli = Cli::from_arg_matches(&cmd.try_get_matches_from(args)?)?;
    let out = Output::new(cli.json);
    // The network at --layers, the deepest the search may try, checked once.
    let setup = cli.model.setup(&cli.device)?;
    let batch = setup.step.batch();
    // The search starts from one hidden layer and goes up to --layers.
    let max_layers = cli.model.layers;
    let base = setup.step.config().clone().with_layers(1);
    cli.snapshot.check()?;
    let opened = Device::new(&cli.device.options(cli.device.backend))?.info();
    let (backend, why) =
        cli::args::heavy_backend(cli.device.backend, opened.backend, cli.device.device_memory);
    out.line("Challenge 2 — how deep before the card runs out?");
    out.line(cli::device_line(&opened));
    out.line(cli.device.card_line());
    if let Some(why) = &why {
        out.line(format!("runs:    {why}"));
    }
    if let Some(n) = &setup.notice {
        out.line(format!("note:    {n}"));
    }
    out.line(format!(
        "network: {} inputs → N hidden layers of {} (ReLU) → {} classes, batch {batch}, {}",
        base.inputs, base.hidden, base.classes, base.optimizer
    ));

    let search = search_depths(&cli, &base, batch, cli.device.options(backend), out)?;
    // In the order tried, as the table's title says; the first failure is the shallowest.
    let attempts: Vec<&(u64, StepMemory)> = search.attempts.iter().collect();
    print_attempts(&attempts, out);
    let first_failure = attempts
        .iter()
        .filter(|(_, m)| !m.fits())
        .min_by_key(|(layers, _)| *layers);
    let Some(deepest) = search.best else {
        let oom = first_failure.and_then(|(_, m)| m.oom.as_ref());
        anyhow::bail!(
            "not even one hidden layer fits on this card:\n{}",
            oom.map_or_else(|| "no report".to_string(), |o| o.to_string())
        );
    };
    print_result(&base, deepest, first_failure.copied(), out);
    let layers = first_failure.map_or(deepest, |(l, _)| *l);
    snapshot(
        &cli,
        &base.clone().with_layers(layers),
        batch,
        &cli.device.options(backend),
        out,
    )?;
    let card_bytes = match opened.memory {
        gpumem::MemorySpec::Bytes(b) => Some(b),
        gpumem::MemorySpec::Native => None,
    };
    // The allocator may use what the card does not hold outside it.
    let options = cli.device.options(backend);
    let predicted = card_bytes.and_then(|c| {
        let room = c.saturating_sub(options.allocator.context_memory);
        deepest_that_fits(&base, batch.get(), room, max_layers, options.cublas)
    });
    if let Some(p) = predicted {
        out.line(format!(
            "The memory equation (gpumem::estimate) predicts {p} hidden layers; the engine measured {deepest}."
        ));
    }
    let explained = out.text_if(cli.explain);
    let compared = compare(&base, batch, deepest, card_bytes, explained)?;
    out.json(&json!({
        "device": opened,
        "card": cli.device.card,
        "backend": backend,
        "batch": batch,
        "config": base,
        "attempts": search.attempts.iter().map(|(l, m)| json!({"layers": l, "measured": m})).collect::<Vec<_>>(),
        "deepest_fit": deepest,
        "first_failure": first_failure.map(|(l, m)| json!({"layers": l, "failed_in": m.failed_in, "message": m.oom.as_ref().map(|o| o.to_string())})),
        "equation_predicts": predicted,
        "per_layer_bytes": compared.per_layer,
        "lesson_layers_need": compared.lesson_layers_need,
        "memory_snapshot": cli.snapshot.memory_snapshot,
    }));
    Ok(())
}

/// With `--memory-snapshot`: `config`'s step once more, on a device that records its history,
/// and its snapshot written.
fn snapshot(
    cli: &Cli,
    config: &MlpConfig,
    batch: NonZeroU64,
    options: &DeviceOptions,
    out: Output,
) -> anyhow::Result<()> {
    if cli.snapshot.memory_snapshot.is_none() {
        return Ok(());
    }
    let device = Device::new(&cli.snapshot.options(options.clone()))?;
    measure_setup_on(
        &device,
        &StepSetup::new(config.clone(), batch)?,
        cli.model.seed,
    )?;
    if let Some(path) = cli.snapshot.write(&device)? {
        out.line(format!(
            "\n{} ({} hidden layers)",
            cli::snapshot_args::written_line(path),
            config.layers
        ));
    }
    Ok(())
}

/// Doubles the depth until a step fails, then bisects, with a progress bar.
fn search_depths(
    cli: &Cli,
    base: &MlpConfig,
    batch: NonZeroU64,
    options: DeviceOptions,
    out: Output,
) -> anyhow::Result<Search> {
    let max_layers = cli.model.layers;
    let bar = cli::progress(
        2 * (64 - max_layers.leading_zeros() as u64) + 2,
        "trying depths",
        out,
    );
    let search = search_largest(max_layers, |layers| {
        bar.inc(1);
        let setup = StepSetup::new(base.clone().with_layers(layers), batch)?;
        measure_setup(&options, &setup, cli.model.seed)
    })?;
    bar.finish_and_clear();
    Ok(search)
}

/// A row per attempted depth (`--json` has each one's parameters and peak reserved too).
fn print_attempts(attempts: &[&(u64, StepMemory)], out: Output) {
    let rows: Vec<Vec<String>> = attempts
        .iter()
        .map(|(layers, m)| {
            vec![
                layers.to_string(),
                format_bytes(m.peak_allocated),
                if m.fits() {
                    "yes".into()
                } else {
                    format!(
                        "no: {}",
                        m.failed_in.map(|p| p.to_string()).unwrap_or_default()
                    )
                },
            ]
        })
        .collect();
    out.section("Attempts, in the order tried (doubling, then bisection)");
    out.table(&["layers", "peak allocated", "fits?"], &rows);
    if attempts.iter().any(|(_, m)| !m.fits()) {
        out.line("(a row that does not fit: its peak until the allocation that failed)");
    }
}

/// The first depth that ran out, its message, and the deepest that fits.
fn print_result(
    base: &MlpConfig,
    deepest: u64,
    first_failure: Option<&(u64, StepMemory)>,
    out: Output,
) {
    out.section("Result");
    match first_failure {
        Some((layers, m)) => {
            // The failing tensor, as the book's page names it (`layer1.weight.grad`).
            let tensor = m
                .oom
                .as_ref()
                .map_or(String::new(), |o| format!(", allocating `{}`", o.label));
            out.line(format!(
                "{layers} hidden layers ran out of memory in the {}{tensor}:\n",
                m.failed_in.map(|p| p.to_string()).unwrap_or_default()
            ));
            if let Some(oom) = &m.oom {
                out.line(oom.to_string());
            }
            out.line(format!(
                "\nThe deepest network that fits: {deepest} hidden layers of {}.",
                base.hidden
            ));
        }
        None => out.line(format!(
            "Every depth up to {deepest} fits (raise --layers to go further)."
        )),
    }
}

/// What the comparison with the equation and the lesson found.
struct Compared {
    per_layer: u64,
    lesson_layers_need: u64,
}

/// What one more layer adds by term, and the lesson's remark (printed with `--explain`).
fn compare(
    base: &MlpConfig,
    batch: NonZeroU64,
    deepest: u64,
    card_bytes: Option<u64>,
    out: Output,
) -> anyhow::Result<Compared> {
    let at =
        |layers: u64| StepSetup::new(base.clone().with_layers(layers), batch).map(|s| s.estimate());
    // One layer more, next to the deepest fit: the busiest moment is the one that decides.
    let below = deepest.saturating_sub(1).max(1);
    let (here, next) = (at(below)?, at(below + 1)?);
    let per_layer = next.peak_allocated.saturating_sub(here.peak_allocated);
    let lesson = at(LESSON_LAYERS)?;
    let lesson_next = at(LESSON_LAYERS + 1)?;
    out.section("One more layer, and the lesson's five");
    let mut model_growth = 0i128;
    let mut activation_growth = 0i128;
    let terms: Vec<String> = here
        .categories()
        .into_iter()
        .zip(next.categories())
        .filter(|((_, a), (_, b))| a != b)
        .map(|((name, a), (_, b))| {
            let d = i128::from(b) - i128::from(a);
            match name {
                "activations" | "batch" => activation_growth += d,
                _ => model_growth += d,
            }
            let sign = if d > 0 { "+" } else { "−" };
            format!("{name} {sign}{}", format_bytes(d.unsigned_abs() as u64))
        })
        .collect();
    out.line(format!(
        "One more hidden layer ({} parameters) adds {} to the busiest moment of a step at \
         {} layers, batch {batch}: {}.",
        (base.hidden + 1) * base.hidden,
        format_bytes(per_layer),
        below + 1,
        terms.join(", ")
    ));
    let dominant = if model_growth >= activation_growth {
        "the parameters and what comes with them (gradients, optimizer state, Adam's square \
         roots) dominate, and they grow with the square of the width"
    } else {
        "the activations dominate, and they grow with the batch"
    };
    let share = card_bytes.map_or("an unknown fraction".into(), |c| {
        format!("{:.0} %", 100.0 * lesson.peak_allocated as f64 / c as f64)
    });
    out.line(format!(
        "The lesson says this typically happens at about {LESSON_LAYERS} hidden layers of 5000 neurons. \
         Here {LESSON_LAYERS} layers of {} need {} — {share} of this card. At batch {batch} \
         {dominant}: {LESSON_LAYERS} layers would be the deepest for this optimizer on a card \
         of less than {}, or with a wider network.",
        base.hidden,
        format_bytes(lesson.peak_allocated),
        format_bytes(lesson_next.peak_allocated),
    ));
    Ok(Compared {
        per_layer,
        lesson_layers_need: lesson.peak_allocated,
    })
}
