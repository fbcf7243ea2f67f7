//! `--scenario fragmentation`: an epoch whose last batch is a little shorter than the others,
//! in a loop that keeps the last step's outputs to log them. The short batch's activations are
//! carved out of the full batches' cached segments, its small `y_pred` lands in a leftover
//! piece at the end of one of them, and because the loop still holds it when epoch 2 starts,
//! that segment cannot hold a full batch's activation again: epoch 2's first step fails
//! although more memory is cached and unused than it asks for. Then the same run with each of
//! the allocator's remedies.

use super::runner::{self, Keep, RunResult, RunSpec};
use super::{Setup, write_timeline};
use cli::Output;
use cli::alloc_args::describe;
use gpumem::alloc::AllocatorConfig;
use gpumem::size::format_bytes;
use serde::Serialize;
use serde_json::json;

const MIB: u64 = 1 << 20;
/// The remedies' settings when the user gave none: the smallest split limit PyTorch allows
/// (any value from 20 MiB up to the activations' size works), PyTorch's documented example
/// threshold, and the whole card as the memory fraction the threshold needs to act at all.
const MAX_SPLIT: u64 = 20 * MIB;
const GC_THRESHOLD: f64 = 0.8;
const WHOLE_CARD: f64 = 1.0;

/// One of the allocator's remedies, as the demo tries it.
#[derive(Debug, Clone)]
pub struct Remedy {
    /// The flag or the call, as typed: `--max-split-size`, `empty_cache()`.
    pub code: &'static str,
    /// When the call is made, after `code` (empty for a flag).
    pub when: &'static str,
    pub allocator: AllocatorConfig,
    /// Call `empty_cache()` before a batch whose size differs from the one before it.
    pub empty_cache_on_size_change: bool,
}

impl Remedy {
    /// `--max-split-size`, `empty_cache() when the batch size changes`.
    pub fn name(&self) -> String {
        format!("{}{}", self.code, self.when)
    }
}

/// The remedies the demo tries, in its order: each of the allocator's settings alone (the
/// user's value where `given` has one), then an `empty_cache()` when the batch size changes.
pub fn remedies(given: &AllocatorConfig) -> Vec<Remedy> {
    let flag = |code, allocator| Remedy {
        code,
        when: "",
        allocator,
        empty_cache_on_size_change: false,
    };
    vec![
        flag(
            "--max-split-size",
            AllocatorConfig {
                max_split_size: given.max_split_size.or(Some(MAX_SPLIT)),
                ..AllocatorConfig::default()
            },
        ),
        flag(
            "--expandable-segments",
            AllocatorConfig {
                expandable_segments: true,
                ..AllocatorConfig::default()
            },
        ),
        flag(
            "--no-caching",
            AllocatorConfig {
                caching: false,
                ..AllocatorConfig::default()
            },
        ),
        flag(
            "--gc-threshold --memory-fraction",
            AllocatorConfig {
                gc_threshold: given.gc_threshold.or(Some(GC_THRESHOLD)),
                memory_fraction: given.memory_fraction.or(Some(WHOLE_CARD)),
                ..AllocatorConfig::default()
            },
        ),
        Remedy {
            code: "empty_cache()",
            when: " when the batch size changes",
            allocator: AllocatorConfig::default(),
            empty_cache_on_size_change: true,
        },
    ]
}

/// The scenario's loop on `setup` — it keeps the last step's outputs — with `allocator`, and
/// an `empty_cache()` when the batch size changes if `empty_cache_on_size_change`.
pub fn spec(
    setup: &Setup,
    allocator: AllocatorConfig,
    empty_cache_on_size_change: bool,
    trace: bool,
) -> RunSpec {
    RunSpec {
        options: setup.options(allocator),
        config: setup.step.config().clone(),
        samples: setup.model.samples.get(),
        batch: setup.step.batch(),
        epochs: setup.epochs,
        seed: setup.model.seed,
        keep: Keep::Last,
        empty_cache_on_size_change,
        trace,
    }
}

/// The scenario's runs, each on a fresh device.
#[derive(Debug)]
pub struct Fragmentation {
    /// The loop with the user's allocator settings, traced.
    pub base: RunResult,
    /// Each remedy's run, when `base` ran out of memory (none when it did not).
    pub remedies: Vec<(Remedy, RunResult)>,
}

/// Runs the loop with `setup`'s allocator settings and, if it runs out of memory, with each
/// of [`remedies`].
pub fn runs(setup: &Setup) -> Result<Fragmentation, gpumem::Error> {
    let given = setup.allocator.config();
    let base = runner::run(&spec(setup, given.clone(), false, true))?;
    let mut tried = Vec::new();
    if base.failure.is_some() {
        for remedy in remedies(&given) {
            let r = runner::run(&spec(
                setup,
                remedy.allocator.clone(),
                remedy.empty_cache_on_size_change,
                false,
            ))?;
            tried.push((remedy, r));
        }
    }
    Ok(Fragmentation {
        base,
        remedies: tried,
    })
}

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
    /// Of those, pages mapped into / unmapped from expandable segments (`cuMemMap` /
    /// `cuMemUnmap` in PyTorch's trace).
    maps: u64,
    unmaps: u64,
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
        maps: if config.expandable_segments {
            r.device_allocations
        } else {
            0
        },
        unmaps: if config.expandable_segments {
            r.device_frees
        } else {
            0
        },
        error: r.failure.as_ref().map(|f| f.oom.to_string()),
    }
}

/// `--scenario fragmentation`: the failing run and its message, each remedy's run, what the
/// settings really do, and the failing run's timeline.
pub fn run(setup: &Setup, out: Output) -> anyhow::Result<()> {
    setup.header(out, "a fragmented cache and the allocator's remedies");
    let given = setup.allocator.config();
    let Fragmentation { base, remedies } = runs(setup)?;
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
    let mut attempts = vec![attempt("none (the run above)", &given, &base)];
    for (remedy, r) in &remedies {
        attempts.push(attempt(&remedy.name(), &remedy.allocator, r));
    }
    print_remedies(&attempts, out);

    print_what_settings_do(setup, &given, &attempts, out);
    out.line(format!("\ntimeline of the failing run: {}", path.display()));
    out.json(&json!({
        "scenario": "fragmentation",
        "device": setup.opened,
        "backend": setup.backend,
        "config": setup.step.config(),
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

/// Each remedy's run: outcome, peak reserved, and the device calls it made.
fn print_remedies(attempts: &[Attempt], out: Output) {
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
            "device allocations",
            "device frees",
        ],
        &rows,
    );
    out.line(
        "\nDevice allocations and frees are calls to the driver: cudaMalloc/cudaFree in PyTorch, \
         or for expandable segments a page mapping (cuMemMap/cuMemUnmap, the trace's \
         segment_map/segment_unmap). Each costs time, and without caching every tensor costs \
         one.",
    );
}

/// What expandable segments did: whether the run fitted, and the mappings it cost.
fn print_expandable(e: &Attempt, out: Output) {
    let outcome = if e.succeeded {
        "the run finished: the short batch's tensors and the next full batch's were laid out \
         in one growing segment, so the free space they left joined up instead of being \
         stranded at the ends of separate segments"
    } else {
        "the run still ran out of memory"
    };
    out.line(format!(
        "expandable_segments (what today's out-of-memory message recommends): one segment per \
         pool that grows by mapping 20 MiB pages. Measured: {outcome}; it cost {} page mappings \
         and {} unmappings (the trace's segment_map/segment_unmap), and reserved up to {}. {}",
        e.maps,
        e.unmaps,
        format_bytes(e.peak_reserved),
        cli::alloc_args::notes(&AllocatorConfig {
            expandable_segments: true,
            ..Default::default()
        })
        .join(" ")
    ));
}

/// What `max_split_size`, the garbage-collection threshold and `empty_cache()` really did in
/// these runs, against what the source article says of them.
fn print_what_settings_do(
    setup: &Setup,
    given: &AllocatorConfig,
    attempts: &[Attempt],
    out: Output,
) {
    out.section("What the settings really do (measured above, against the article)");
    let card = setup.card().unwrap_or(0);
    let split = given.max_split_size.unwrap_or(MAX_SPLIT);
    let by = |code: &str| {
        attempts
            .iter()
            .find(|a| a.remedy.starts_with(code))
            .expect("every remedy is tried")
    };
    out.line(format!(
        "max_split_size is a threshold, not a partition: the article says it cuts the card into \
         blocks of that size ({} / {} would be {} blocks). Measured: the allocator still reserves \
         segments only as requests need them ({} segment allocations in this run); blocks of {} \
         or more are simply never split, so small tensors cannot pin them.",
        format_bytes(card),
        format_bytes(split),
        card / split.max(1),
        by("--max-split-size").device_allocations,
        format_bytes(split)
    ));
    print_expandable(by("--expandable-segments"), out);
    let gc = by("--gc-threshold");
    let gc_outcome = if gc.succeeded {
        "It helped here: it gave back whole unused segments when a request found no cached \
         block, before the run needed more than the card."
            .to_string()
    } else if gc.device_frees == 0 {
        "It did not help here: when epoch 2 needed one more segment, every cached segment still \
         held a live tensor — the one the kept outputs pin among them — so there was nothing \
         to give back."
            .to_string()
    } else {
        format!(
            "It did not help here: the {} segment(s) it gave back were not enough.",
            gc.device_frees
        )
    };
    out.line(format!(
        "garbage_collection_threshold does not clean up \"every few allocations\": PyTorch applies \
         it only when a memory fraction is set (set_per_process_memory_fraction; alone it does \
         nothing), and then only when a request finds no cached block and reserved memory is \
         above threshold × the memory the fraction allows; it gives back only whole unused \
         segments, oldest first. Measured with a fraction of {}: {} segment frees in {} segment \
         allocations. {gc_outcome}",
        given.memory_fraction.unwrap_or(WHOLE_CARD),
        gc.device_frees,
        gc.device_allocations
    ));
    let at_change = by("empty_cache()");
    out.line(if at_change.succeeded {
        format!(
            "empty_cache() after every step (the article's advice) is not needed: at the right \
             place — when the batch size changes — a call there is enough ({} segment frees in \
             this run); it cannot free anything a live tensor still uses.",
            at_change.device_frees
        )
    } else {
        "empty_cache() when the batch size changes did not help here: it cannot free anything \
         a live tensor still uses."
            .to_string()
    });
}
