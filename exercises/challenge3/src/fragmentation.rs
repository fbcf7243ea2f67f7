//! `--scenario fragmentation`: an epoch whose last batch is a little shorter than the others,
//! in a loop that keeps the last step's outputs to log them. The short batch's activations are
//! carved out of the full batches' cached segments, its small outputs land in the leftover
//! pieces, and because the loop still holds them when epoch 2 starts, two big segments cannot
//! be reused or given back: the first full batch of epoch 2 fails although more memory is
//! cached and unused than it asks for. Then the same run with each of the allocator's remedies.

use crate::runner::{self, Keep, RunResult, RunSpec};
use crate::{Setup, write_timeline};
use demo::Output;
use demo::alloc_args::describe;
use gpumem::alloc::AllocatorConfig;
use gpumem::size::format_bytes;
use serde::Serialize;
use serde_json::json;

const MIB: u64 = 1 << 20;
/// The remedies' settings when the user gave none: a split limit well under the activations
/// (any value above 20 MiB and below them works), and PyTorch's documented example threshold.
const MAX_SPLIT: u64 = 64 * MIB;
const GC_THRESHOLD: f64 = 0.8;

/// One run of the pattern and what it cost.
#[derive(Debug, Serialize)]
struct Attempt {
    remedy: String,
    settings: String,
    succeeded: bool,
    epochs_completed: usize,
    peak_allocated: u64,
    peak_reserved: u64,
    /// Segment allocations: calls to the device (`cudaMalloc`).
    device_allocations: u64,
    /// Segment releases: calls to the device (`cudaFree`).
    device_frees: u64,
    error: Option<String>,
}

fn attempt(remedy: &str, config: &AllocatorConfig, r: &RunResult) -> Attempt {
    Attempt {
        remedy: remedy.to_string(),
        settings: describe(config),
        succeeded: r.failure.is_none(),
        epochs_completed: r.epochs.len(),
        peak_allocated: r.peak_allocated,
        peak_reserved: r.peak_reserved,
        device_allocations: r.device_allocations,
        device_frees: r.device_frees,
        error: r.failure.as_ref().map(|f| f.oom.to_string()),
    }
}

pub fn run(setup: &Setup, out: Output) -> anyhow::Result<()> {
    setup.header(out, "a fragmented cache and the allocator's remedies");
    let spec = |allocator: AllocatorConfig, empty: bool, trace: bool| RunSpec {
        options: setup.options(allocator),
        config: setup.model.config(),
        samples: setup.model.samples,
        batch: setup.batch(),
        epochs: setup.epochs,
        seed: setup.model.seed,
        keep: Keep::Last,
        empty_cache_on_size_change: empty,
        trace,
    };
    let given = setup.allocator.config();
    let base = runner::run(&spec(given.clone(), false, true))?;
    let batches = base
        .batches
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    out.section("The run: the loop keeps the last step's outputs (to log them)");
    out.line(format!("batches (rows): {batches}"));
    let path = write_timeline(setup, &base, "a short last batch, then epoch 2")?;
    let Some(failure) = &base.failure else {
        out.line(format!(
            "-> every batch fitted with these settings ({}): no fragmentation to show. \
             Try the defaults of --scenario fragmentation.",
            describe(&given)
        ));
        out.line(format!("\ntimeline: {}", path.display()));
        out.json(&json!({
            "scenario": "fragmentation",
            "device": setup.opened,
            "backend": setup.backend,
            "run": base,
            "fragmented": false,
            "timeline": path,
            "events": base.trace.events.len(),
            "trace_peak_allocated": base.trace.peak_allocated(),
            "trace_peak_reserved": base.trace.peak_reserved(),
        }));
        return Ok(());
    };
    let oom = &failure.oom;
    out.line(format!(
        "-> epoch {}, step {} ({} rows) ran out of memory:\n\n{oom}\n",
        failure.epoch, failure.step, failure.rows
    ));
    out.line(format!(
        "reserved − allocated = {} − {} = {} cached but unused, more than the {} requested: {}",
        format_bytes(oom.reserved),
        format_bytes(oom.allocated),
        format_bytes(oom.cached_unused()),
        format_bytes(oom.requested),
        if oom.is_fragmentation() {
            "the cache is fragmented."
        } else {
            "no — this failure is plain lack of memory, not fragmentation."
        }
    ));

    // The same run with each remedy, each on a fresh device.
    let remedies: Vec<(&str, AllocatorConfig, bool)> = vec![
        (
            "--max-split-size",
            AllocatorConfig {
                max_split_size: given.max_split_size.or(Some(MAX_SPLIT)),
                ..AllocatorConfig::default()
            },
            false,
        ),
        (
            "--no-caching",
            AllocatorConfig {
                caching: false,
                ..AllocatorConfig::default()
            },
            false,
        ),
        (
            "--gc-threshold",
            AllocatorConfig {
                gc_threshold: given.gc_threshold.or(Some(GC_THRESHOLD)),
                ..AllocatorConfig::default()
            },
            false,
        ),
        (
            "empty_cache() when the batch size changes",
            AllocatorConfig::default(),
            true,
        ),
    ];
    let mut attempts = vec![attempt("none (the run above)", &given, &base)];
    for (name, config, empty) in &remedies {
        let r = runner::run(&spec(config.clone(), *empty, false))?;
        attempts.push(attempt(name, config, &r));
    }
    out.section("The same run with each remedy (figures from the allocator's stats)");
    let rows: Vec<Vec<String>> = attempts
        .iter()
        .map(|a| {
            vec![
                a.remedy.clone(),
                a.settings.clone(),
                if a.succeeded {
                    "finished".into()
                } else {
                    format!("out of memory (after {} epoch(s))", a.epochs_completed)
                },
                format_bytes(a.peak_reserved),
                a.device_allocations.to_string(),
                a.device_frees.to_string(),
            ]
        })
        .collect();
    out.table(
        &[
            "remedy",
            "settings",
            "outcome",
            "peak reserved",
            "segment allocations",
            "segment frees",
        ],
        &rows,
    );
    out.line(
        "\nSegment allocations are calls to the device (cudaMalloc in PyTorch): each costs time, \
         and without caching every tensor costs one.",
    );

    out.section("What the settings really do (measured above, against the article)");
    let card = setup.card().unwrap_or(0);
    let split = given.max_split_size.unwrap_or(MAX_SPLIT);
    out.line(format!(
        "max_split_size is a threshold, not a partition: the article says it cuts the card into \
         blocks of that size ({} / {} would be {} blocks). Measured: the allocator still reserves \
         segments only as requests need them ({} segment allocations in this run); blocks of {} \
         or more are simply never split, so small tensors cannot pin them.",
        format_bytes(card),
        format_bytes(split),
        card / split.max(1),
        attempts[1].device_allocations,
        format_bytes(split)
    ));
    let gc = &attempts[3];
    out.line(format!(
        "garbage_collection_threshold does not clean up \"every few allocations\": it acts only \
         when a request finds no cached block and reserved memory is above the threshold, and \
         it gives back only whole unused segments, oldest first. Measured: {} segment frees in {} \
         segment allocations. It helped here only because it returned the full batches' \
         segments before the short batch could be carved out of them.",
        gc.device_frees, gc.device_allocations
    ));
    out.line(
        "empty_cache() after every step (the article's advice) is not needed: at the right place \
         — when the batch size changes — one call is enough; it cannot free anything a live \
         tensor still uses.",
    );
    out.line(format!("\ntimeline of the failing run: {}", path.display()));
    out.json(&json!({
        "scenario": "fragmentation",
        "device": setup.opened,
        "backend": setup.backend,
        "config": setup.model.config(),
        "run": base,
        "fragmented": oom.is_fragmentation(),
        "oom": oom,
        "cached_unused": oom.cached_unused(),
        "attempts": attempts,
        "timeline": path,
        "events": base.trace.events.len(),
        "trace_peak_allocated": base.trace.peak_allocated(),
        "trace_peak_reserved": base.trace.peak_reserved(),
    }));
    Ok(())
}
