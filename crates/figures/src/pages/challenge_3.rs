//! Challenge 3 (`challenge-3.md`): the leak and fragmentation scenarios.

use crate::epochs;
use crate::style::grouped;
use anyhow::{Result, anyhow};
use demos::challenge3::fragmentation::Fragmentation;
use demos::challenge3::leak::{self, Leak};
use demos::challenge3::runner::{Keep, RunResult};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

use super::text_block;

/// Challenge 3's leak: the leaking and the fixed loop on the same small card.
pub fn challenge3_leak() -> Result<String> {
    let setup = epochs::leak_setup()?;
    let spec = leak::spec(&setup, Keep::Every);
    let card = epochs::card(&setup)?;
    let Leak { leaky, fixed } = epochs::leak_runs()?;
    let failure = leaky
        .failure
        .as_ref()
        .ok_or_else(|| anyhow!("the leaking loop did not run out of memory"))?;
    if let Some(f) = &fixed.failure {
        return Err(anyhow!("the fixed loop ran out of memory: {}", f.oom));
    }
    let per_epoch = spec.samples.div_ceil(spec.batch.get());
    let mut out = format!(
        "The lesson's network (one hidden layer of {}, SGD) at batch {} over {} rows — {} steps \
         an epoch — for {} epochs on a {} card, every step planned on the `plan` backing:\n\n\
         | loop | epochs finished | outcome | peak allocated | peak reserved |\n\
         | :--- | ---: | :--- | ---: | ---: |\n",
        grouped(spec.config.hidden),
        spec.batch,
        grouped(spec.samples),
        per_epoch,
        spec.epochs,
        format_bytes(card)
    );
    for (name, r) in [
        ("leaking: `kept.push(outputs)`", leaky),
        ("fixed: the outputs drop", fixed),
    ] {
        let outcome = match &r.failure {
            Some(f) => format!("out of memory in epoch {}, step {}", f.epoch, f.step),
            None => "finished".to_string(),
        };
        writeln!(
            out,
            "| {name} | {} of {} | {outcome} | {} | {} |",
            r.epochs.len(),
            spec.epochs,
            format_bytes(r.peak_allocated),
            format_bytes(r.peak_reserved)
        )?;
    }
    let ends = |r: &RunResult| {
        r.epochs
            .iter()
            .map(|e| format_bytes(e.allocated))
            .collect::<Vec<_>>()
    };
    if leaky.epochs.len() < 2 {
        return Err(anyhow!("the leaking loop finished fewer than two epochs"));
    }
    // Every step after the first epoch adds the same bytes, or the sentence says "about".
    let (grown, steps_between) = leak::growth(leaky);
    let about = if grown % steps_between == 0 {
        ""
    } else {
        "about "
    };
    let fixed_ends = ends(fixed);
    let fixed_words = if fixed_ends.windows(2).all(|w| w[0] == w[1]) {
        format!("{} after every epoch", fixed_ends[0])
    } else {
        fixed_ends.join(", ")
    };
    writeln!(
        out,
        "\nAllocated at the end of each epoch: the leaking loop {} — {about}{} bytes more every \
         step — until step {} of epoch {} asks for a new {} segment that the card cannot give; \
         the fixed loop {fixed_words}.",
        ends(leaky).join(", "),
        grouped(grown / steps_between),
        failure.step,
        failure.epoch,
        format_bytes(failure.oom.tried),
    )?;
    Ok(out)
}

/// Challenge 3's fragmented cache: the failing run, then each remedy on a fresh card.
pub fn challenge3_fragmentation() -> Result<String> {
    let setup = epochs::fragmentation_setup()?;
    let (hidden, samples, batch) = (setup.model.hidden, setup.model.samples.get(), setup.batch());
    let Fragmentation { base, remedies } = epochs::fragmentation_runs()?;
    let failure = base
        .failure
        .as_ref()
        .ok_or_else(|| anyhow!("the fragmentation scenario did not run out of memory"))?;
    let oom = &failure.oom;
    if !oom.is_fragmentation() {
        return Err(anyhow!(
            "the fragmentation scenario failed for lack of memory: {oom}"
        ));
    }
    let epoch: Vec<String> = base.batches[..samples.div_ceil(batch) as usize]
        .iter()
        .map(|&b| grouped(b))
        .collect();
    let mut out = format!(
        "Two hidden layers of {} (SGD), an epoch of {} rows in batches of {}, the loop keeping \
         the last step's outputs, on a {} card. Epoch {}, step {} ({} rows) runs out of \
         memory:\n\n{}\n\
         Reserved − allocated = {} − {} = {} is cached but unused, more than the {} requested: \
         the cache is fragmented. The same loop with each remedy, each on a fresh card (figures \
         from the allocator's statistics):\n\n\
         | remedy | outcome | peak reserved | device allocations | device frees |\n\
         | :--- | :--- | ---: | ---: | ---: |\n",
        grouped(hidden),
        grouped(samples),
        epoch.join(", "),
        format_bytes(epochs::card(&setup)?),
        failure.epoch,
        failure.step,
        grouped(failure.rows),
        text_block(oom),
        format_bytes(oom.reserved),
        format_bytes(oom.allocated),
        format_bytes(oom.cached_unused()),
        format_bytes(oom.requested),
    );
    let mut rows = vec![("none (the run above)".to_string(), &base)];
    for (remedy, r) in &remedies {
        // The flag or the call as code, the setting's value beside a flag, as a learner
        // would type it.
        let a = &remedy.allocator;
        let label = match (a.max_split_size, a.gc_threshold, a.memory_fraction) {
            (Some(bytes), _, _) => format!("`{}` {}", remedy.code, format_bytes(bytes)),
            (_, Some(threshold), Some(fraction)) => {
                format!("`--gc-threshold` {threshold} with `--memory-fraction` {fraction}")
            }
            _ => format!("`{}`{}", remedy.code, remedy.when),
        };
        rows.push((label, r));
    }
    for (label, r) in &rows {
        let outcome = match &r.failure {
            Some(f) => format!("out of memory (epoch {})", f.epoch),
            None => "finished".to_string(),
        };
        writeln!(
            out,
            "| {label} | {outcome} | {} | {} | {} |",
            format_bytes(r.peak_reserved),
            r.device_allocations,
            r.device_frees
        )?;
    }
    Ok(out)
}
