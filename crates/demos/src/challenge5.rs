//! Challenge 5, the instructor's demo: the network Challenge 2 found one layer too deep for
//! one card (and its Adam variant) on 1, 2, 4 and 8 cards under every scheme of
//! [`gpumem::parallel`], planned at full size on the `plan` backing; then the fewest cards
//! each scheme needs.

mod flags;
mod grid;

use clap::{CommandFactory, FromArgMatches};
use cli::{Output, with_defaults};
use flags::Cli;
use gpumem::measure::deepest_network;
use gpumem::mlp::{MlpConfig, Optimizer};
use gpumem::parallel::{Scheme, fewest_cards_by, measure_group};
use gpumem::size::{MemorySpec, format_bytes};
use grid::Cell;
use serde_json::json;
use std::ffi::OsString;

/// Runs the demo with `args`, the program's name first (as `std::env::args_os()` gives them);
/// it prints through [`cli::Output`]. A command-line error (or `--help`) is returned as a
/// `clap::Error`, which [`cli::run_main`] prints and exits with.
pub fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> anyhow::Result<()> {
    let cmd = with_defaults(Cli::command(), &[("hidden", "5000"), ("layers", "4096")])
        .mut_arg("layers", |a| {
            a.help(
                "The deepest network to try when searching, as Challenge 2 does, for the first \
                 depth that does not fit on one card",
            )
        })
        .mut_arg("batch", |a| {
            a.help(
                "Rows per step for the whole group, split over the cards (each pipeline stage \
                 sees them all, in micro-batches), or `full` for the whole training set",
            )
        })
        .mut_arg("backend", |a| {
            a.help("Ignored here: full-size cards are always planned on the plan backing")
        });
    let cli = Cli::from_arg_matches(&cmd.try_get_matches_from(args)?)?;
    let out = Output::new(cli.json);
    // The network at --layers, the deepest the search may try, checked once.
    let setup = cli.model.setup(&cli.device)?;
    let batch = setup.step.rows();
    let MemorySpec::Bytes(card_bytes) = cli.device.device_memory else {
        anyhow::bail!("--device-memory: the cards are planned, so they need a size (not native)");
    };
    let card = cli.device.options(gpumem::Backend::Plan);
    out.line("Challenge 5 — more than one card");
    out.line(format!(
        "cards:   {} each, planned on the plan backing (every allocation, no kernels)",
        format_bytes(card_bytes)
    ));
    if let Some(n) = &setup.notice {
        out.line(format!("note:    {n}"));
    }
    let mut networks = Vec::new();
    let mut unfit = true;
    for config in variants(setup.step.config(), cli.model.lr) {
        let (config, deepest) = one_layer_too_deep(&cli, &card, config, batch)?;
        let cells = measure_all(&cli, &card, &config, batch, out)?;
        print_network(&config, deepest, batch, &cells, out);
        let fewest = fewest(&cli, &card, &config, batch, &cells)?;
        print_fewest(&fewest, cli.max_cards, out);
        unfit &= fewest.iter().all(|(_, n)| n.is_none());
        networks.push(json!({
            "config": config,
            "deepest_on_one_card": deepest,
            "cells": cells.iter().map(Cell::json).collect::<Vec<_>>(),
            "fewest_cards": fewest.iter().map(|(s, n)| json!({"scheme": s.name(), "cards": n})).collect::<Vec<_>>(),
        }));
    }
    let bubble = print_bubble(&cli, out);
    if unfit {
        anyhow::bail!(
            "no scheme fits these networks on up to {} cards of {} (raise --max-cards, or give \
             a larger --device-memory)",
            cli.max_cards,
            format_bytes(card_bytes)
        );
    }
    out.json(&json!({
        "card_bytes": card_bytes,
        "batch": batch,
        "max_cards": cli.max_cards,
        "networks": networks,
        "pipeline_bubble": bubble,
    }));
    Ok(())
}

/// The network of the flags, and its Adam variant at learning rate `lr` when it trains with
/// SGD.
fn variants(config: &MlpConfig, lr: f32) -> Vec<MlpConfig> {
    let adam = matches!(config.optimizer, Optimizer::Sgd { .. })
        .then(|| config.clone().with_optimizer(Optimizer::adam(lr)));
    std::iter::once(config.clone()).chain(adam).collect()
}

/// `config` one hidden layer deeper than the deepest that fits one card (the engine's search,
/// Challenge 2's), and that deepest depth (0: not even one layer fits).
fn one_layer_too_deep(
    cli: &Cli,
    card: &gpumem::DeviceOptions,
    config: MlpConfig,
    batch: u64,
) -> anyhow::Result<(MlpConfig, u64)> {
    let max = cli.model.layers;
    let deepest = deepest_network(card, &config, batch, max)?
        .best
        .unwrap_or(0);
    if deepest == max {
        anyhow::bail!(
            "every depth up to --layers {max} fits on one card: raise --layers to find the first \
             that does not"
        );
    }
    Ok((config.with_layers(deepest + 1), deepest))
}

/// Every scheme asked for on every group size, with a progress bar.
fn measure_all(
    cli: &Cli,
    card: &gpumem::DeviceOptions,
    config: &MlpConfig,
    batch: u64,
    out: Output,
) -> anyhow::Result<Vec<Cell>> {
    let (schemes, counts) = (cli.schemes(), cli.card_counts());
    let bar = cli::progress(
        (schemes.len() * counts.len()) as u64,
        "planning groups",
        out,
    );
    let mut cells = Vec::new();
    for &scheme in &schemes {
        for &cards in &counts {
            bar.inc(1);
            cells.push(grid::measure(
                card,
                config,
                scheme,
                cards,
                batch,
                cli.model.seed,
            )?);
        }
    }
    bar.finish_and_clear();
    Ok(cells)
}

/// The fewest cards (up to `--max-cards`) each scheme asked for needs.
fn fewest(
    cli: &Cli,
    card: &gpumem::DeviceOptions,
    config: &MlpConfig,
    batch: u64,
    cells: &[Cell],
) -> anyhow::Result<Vec<(Scheme, Option<usize>)>> {
    // The group sizes the table planned already are not planned again.
    let known = |s: Scheme, n: usize| cells.iter().find(|c| c.scheme == s && c.cards == n);
    cli.schemes()
        .into_iter()
        .map(|s| {
            let fewest = fewest_cards_by(config, s, batch, cli.max_cards, |n| match known(s, n) {
                Some(cell) => Ok(cell.fits()),
                None => Ok(measure_group(card, config, s, n, batch, cli.model.seed)?.fits()),
            })?;
            Ok((s, fewest))
        })
        .collect()
}

fn print_network(config: &MlpConfig, deepest: u64, batch: u64, cells: &[Cell], out: Output) {
    out.section(&format!(
        "{} inputs → {} hidden layers of {} → {} classes, {}, a global batch of {batch} rows",
        config.inputs, config.layers, config.hidden, config.classes, config.optimizer
    ));
    let fits = match deepest {
        0 => "no hidden layer".to_string(),
        1 => "1 hidden layer".to_string(),
        n => format!("{n} hidden layers"),
    };
    out.line(format!(
        "One card fits {fits} (Challenge 2's search); this network has one more. The global \
         batch is split over the cards, the first ones taking a row more when it does not \
         divide (a pipeline's stages each see every row, in micro-batches)."
    ));
    let rows: Vec<Vec<String>> = cells.iter().map(Cell::table_row).collect();
    out.table(&grid::HEADERS, &rows);
    if let Some(m) = grid::first_message(cells) {
        out.line(format!("\nThe first of these messages in full:\n{m}"));
    }
}

/// The pipelines' bubble on each group size asked for (when a pipeline scheme is): the share
/// of a step each card idles, from the schedule in unit times — a model, not a measurement.
fn print_bubble(cli: &Cli, out: Output) -> Vec<serde_json::Value> {
    use gpumem::parallel::{BACKWARD_COST, MICRO_BATCHES_PER_STAGE, bubble};
    let Some(schedule) = cli.schemes().iter().find_map(|s| s.pipeline()) else {
        return Vec::new();
    };
    let shares: Vec<(usize, usize, f64)> = cli
        .card_counts()
        .into_iter()
        .map(|n| {
            let m = MICRO_BATCHES_PER_STAGE as usize * n;
            (n, m, bubble(schedule, n, m))
        })
        .collect();
    let words: Vec<String> = shares
        .iter()
        .map(|(n, m, b)| format!("{:.0} % on {n} card(s) ({m} micro-batches)", 100.0 * b))
        .collect();
    out.line(format!(
        "\nThe pipelines' bubble, the share of each step a card waits (GPipe and 1F1B alike; \
         the schedule in unit times, forward 1, backward {BACKWARD_COST}: a model, not a \
         measurement): {}.",
        words.join(", ")
    ));
    shares
        .iter()
        .map(|(n, m, b)| json!({"cards": n, "micro_batches": m, "idle_share": b}))
        .collect()
}

fn print_fewest(fewest: &[(Scheme, Option<usize>)], max_cards: usize, out: Output) {
    out.line("\nThe fewest cards each scheme needs:");
    for (scheme, n) in fewest {
        let n = n.map_or(format!("none of 1 to {max_cards}"), |n| n.to_string());
        out.line(format!(
            "  {:<16} {n}   ({})",
            scheme.name(),
            scheme.pytorch()
        ));
    }
}
