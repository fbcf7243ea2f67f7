//! `--scenario train`: the lesson's network for a few epochs with the allocator's trace on —
//! allocated and reserved after each epoch, the `memory_summary()` table, and the timeline.

use super::leak;
use super::runner::{self, EPOCH_HEADERS, Keep, epoch_rows};
use super::{Setup, write_timeline};
use cli::Output;
use gpumem::size::format_bytes;
use serde_json::json;

pub fn run(setup: &Setup, out: Output) -> anyhow::Result<()> {
    setup.header(out, "watching allocated and reserved memory");
    // The leak scenario's loop, keeping nothing: the plain training loop, traced.
    let spec = leak::spec(setup, Keep::Nothing);
    let bar = cli::progress(1, "training", out);
    let result = runner::run(&spec)?;
    bar.finish_and_clear();
    out.section("After each epoch (the allocator's figures)");
    out.table(&EPOCH_HEADERS, &epoch_rows(&result.epochs));
    if let Some(f) = &result.failure {
        out.line(format!(
            "\nEpoch {} step {} ran out of memory:\n{}",
            f.epoch, f.step, f.oom
        ));
    }
    out.line(format!(
        "\nReserved stays at or above allocated: freed blocks go back to the cache, not to the \
         device. Allocated peaked at {}, reserved at {}.",
        format_bytes(result.peak_allocated),
        format_bytes(result.peak_reserved)
    ));
    out.section("memory_summary() at the end");
    out.line(result.summary.trim_end());
    let title = format!("{} epochs of the lesson's network", result.epochs.len());
    let path = write_timeline(setup, &result, &title)?;
    out.line(format!(
        "\ntimeline ({} events): {}",
        result.trace.events.len(),
        path.display()
    ));
    out.json(&json!({
        "scenario": "train",
        "device": setup.opened,
        "backend": setup.backend,
        "config": setup.step.config(),
        "allocator": setup.allocator.config(),
        "run": result,
        "events": result.trace.events.len(),
        "trace_peak_allocated": result.trace.peak_allocated(),
        "trace_peak_reserved": result.trace.peak_reserved(),
        "timeline": path,
    }));
    Ok(())
}
