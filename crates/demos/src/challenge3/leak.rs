//! `--scenario leak`: the "crash after a few epochs" of a loop that keeps every step's
//! outputs on the device, beside the fixed loop on the same card.

use super::runner::{self, EPOCH_HEADERS, Keep, RunResult, RunSpec, epoch_rows};
use super::{Setup, write_timeline};
use cli::Output;
use gpumem::size::format_bytes;
use serde_json::json;

/// The scenario's loop on `setup`, keeping `keep` of each step's outputs, traced.
pub fn spec(setup: &Setup, keep: Keep) -> RunSpec {
    RunSpec {
        options: setup.options(setup.allocator.config()),
        config: setup.step.config().clone(),
        samples: setup.model.samples.get(),
        batch: setup.step.batch(),
        epochs: setup.epochs,
        seed: setup.model.seed,
        keep,
        empty_cache_on_size_change: false,
        trace: true,
    }
}

/// The scenario's two loops on the same card.
#[derive(Debug)]
pub struct Leak {
    /// `kept.push(outputs)` after every step.
    pub leaky: RunResult,
    /// The outputs drop inside the step.
    pub fixed: RunResult,
}

/// Runs the leaking and the fixed loop on `setup`, each on a fresh device.
pub fn runs(setup: &Setup) -> Result<Leak, gpumem::Error> {
    Ok(Leak {
        leaky: runner::run(&spec(setup, Keep::Every))?,
        fixed: runner::run(&spec(setup, Keep::Nothing))?,
    })
}

/// How allocated grew from the end of the first epoch to the end of the last: the bytes,
/// and the steps they grew over (at least 1).
pub fn growth(r: &RunResult) -> (u64, u64) {
    let first = r.epochs.first().map_or(0, |e| e.allocated);
    let last = r.epochs.last().map_or(0, |e| e.allocated);
    let first_steps = r.epochs.first().map_or(0, |e| e.steps);
    (
        last.saturating_sub(first),
        r.steps().saturating_sub(first_steps).max(1),
    )
}

fn show(out: Output, title: &str, r: &RunResult) {
    out.section(title);
    out.table(&EPOCH_HEADERS, &epoch_rows(&r.epochs));
    match &r.failure {
        Some(f) => out.line(format!(
            "-> out of memory in epoch {} (step {}), after {} whole epoch(s):\n{}",
            f.epoch,
            f.step,
            r.epochs.len(),
            f.oom
        )),
        None => out.line(format!(
            "-> finished all {} epochs; peak allocated {}, peak reserved {}",
            r.epochs.len(),
            format_bytes(r.peak_allocated),
            format_bytes(r.peak_reserved)
        )),
    }
}

/// `--scenario leak`: both loops epoch by epoch, what happened, and the leaking loop's
/// timeline.
pub fn run(setup: &Setup, out: Output) -> anyhow::Result<()> {
    setup.header(out, "a leak: keeping every step's outputs");
    let Leak { leaky, fixed } = runs(setup)?;
    show(
        out,
        "Leaking loop: `kept.push(outputs)` after every step",
        &leaky,
    );
    show(
        out,
        "Fixed loop: read the loss, let the outputs drop",
        &fixed,
    );
    let per_step = |r: &RunResult| {
        let (bytes, steps) = growth(r);
        bytes / steps
    };
    out.section("What happened");
    out.line(format!(
        "The leaking loop holds each step's `y_pred` and its loss — {} a step once rounded to \
         the allocator's 512-byte blocks — so allocated climbs epoch after epoch until the card \
         is full. Nothing is wrong with any single step: the crash comes late, as in the article. \
         The fixed loop's allocated memory ends every epoch where it started.",
        format_bytes(per_step(&leaky))
    ));
    out.line(
        "empty_cache() would not have saved it: it returns cached blocks nobody uses, and the \
         kept outputs are in use. Drop them (or keep plain numbers, not device tensors).",
    );
    let path = write_timeline(setup, &leaky, "the leaking loop, epoch by epoch")?;
    out.line(format!(
        "\ntimeline of the leaking loop: {}",
        path.display()
    ));
    out.json(&json!({
        "scenario": "leak",
        "device": setup.opened,
        "backend": setup.backend,
        "config": setup.step.config(),
        "allocator": setup.allocator.config(),
        "leaky": leaky,
        "fixed": fixed,
        "timeline": path,
        "events": leaky.trace.events.len(),
        "trace_peak_allocated": leaky.trace.peak_allocated(),
        "trace_peak_reserved": leaky.trace.peak_reserved(),
    }));
    Ok(())
}
