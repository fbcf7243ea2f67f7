//! Numbers the book quotes, as Markdown the pages include with
//! `{{#include ../generated/NAME.md}}`. Tables and paragraphs end with a newline; one-value
//! snippets (`card_capacity.md`, …) have none, so they can sit inside a sentence.

use crate::alts;
use crate::data::{
    self, DEEP_BATCH, DEEP_WIDTH, LESSON_WIDTH, LargestBatch, card, equation, measure, network,
    on_card, optimizer_name, unbounded,
};
use crate::epochs;
use crate::style::grouped;
use anyhow::{Result, anyhow};
use challenge3::fragmentation::Fragmentation;
use challenge3::leak::{self, Leak};
use challenge3::runner::{Keep, RunResult};
use gpumem::alloc::OutOfMemory;
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::estimate::reference_setups;
use gpumem::mlp::{MlpConfig, Optimizer};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// Every `reference_setups()` entry: the equation's peak against one measured step on plan.
pub fn estimate_table() -> Result<String> {
    let mut out = String::from(
        "| layers × width | batch | optimizer | the equation (bytes) | measured (bytes) | equal |\n\
         | :--- | ---: | :--- | ---: | ---: | :---: |\n",
    );
    let setups = reference_setups();
    let mut equal = 0;
    for (config, batch) in &setups {
        let predicted = equation(config, *batch)?.peak_allocated;
        let measured = measure(&unbounded(), config, *batch)?.peak_allocated;
        let same = predicted == measured;
        equal += usize::from(same);
        writeln!(
            out,
            "| {}\u{a0}×\u{a0}{} | {} | {} | {} | {} | {} |",
            config.layers,
            grouped(config.hidden),
            grouped(*batch),
            optimizer_name(&config.optimizer),
            grouped(predicted),
            grouped(measured),
            if same { "yes" } else { "**no**" },
        )?;
    }
    let agree = if equal == setups.len() {
        format!("all {}", setups.len())
    } else {
        format!("{equal} of {}", setups.len())
    };
    let verdict = format!(
        "Layers × width: hidden layers and their width. Measured: `max_memory_allocated()` \
         after one step on the `plan` backing. The equation and the measurement agree to the byte on {agree} \
         setups."
    );
    Ok(format!("{out}\n{verdict}\n"))
}

/// Challenge 1: the whole training set as one batch, by category, and what the card says.
pub fn challenge1_full_batch() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let e = equation(&config, FULL)?;
    let step = measure(&on_card(), &config, FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card: challenge 1 is moot"))?;
    let largest = largest_batch()?;
    let mut out = format!(
        "The lesson's network (2 features, one hidden layer of {}, 2 classes, SGD) with all \
         {} training rows as one batch, by the memory equation:\n\n\
         | memory | bytes |\n| :--- | ---: |\n",
        grouped(LESSON_WIDTH),
        grouped(FULL)
    );
    for (name, bytes) in e.categories() {
        writeln!(out, "| {name} | {} |", format_bytes(bytes))?;
    }
    writeln!(
        out,
        "| **peak allocated** | **{}** |\n",
        format_bytes(e.peak_allocated)
    )?;
    writeln!(
        out,
        "On the {} card, one step on `plan` fails while allocating `{}`:\n\n```text\n{oom}\n```\n",
        format_bytes(card()),
        oom.label
    )?;
    writeln!(
        out,
        "The largest batch that fits is {} rows: its step peaks at {} allocated and {} reserved.",
        grouped(largest.rows),
        format_bytes(largest.step.peak_allocated),
        format_bytes(largest.step.peak_reserved)
    )?;
    Ok(out)
}

/// Challenge 2: the deepest network of width 5000 at batch 32 that fits, SGD and Adam.
pub fn challenge2_depth() -> Result<String> {
    let mut out = format!(
        "Hidden layers of {} at a batch of {DEEP_BATCH} rows on the {} card, one step on `plan` \
         for each depth:\n\n\
         | optimizer | deepest that fits | its peak allocated | its peak reserved | the equation's deepest |\n\
         | :--- | ---: | ---: | ---: | ---: |\n",
        grouped(DEEP_WIDTH),
        format_bytes(card())
    );
    let mut remarks = Vec::new();
    for optimizer in [Optimizer::LESSON, data::adam()] {
        let fit = data::deepest_fit(optimizer)?;
        let name = optimizer_name(&optimizer);
        writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            fit.layers,
            format_bytes(fit.step.peak_allocated),
            format_bytes(fit.step.peak_reserved),
            fit.equation_layers,
        )?;
        let where_ = if fit.failed_in == gpumem::measure::Phase::Model {
            "while building the model"
        } else {
            "during the step"
        };
        remarks.push(format!(
            "With {name}, {} layers run out of memory {where_}, allocating `{}`.",
            fit.layers + 1,
            fit.oom.label
        ));
        remarks.push(match fit.equation_layers.cmp(&fit.layers) {
            std::cmp::Ordering::Equal => format!(
                "The equation's answer, {} layers, is the measured one.",
                fit.layers
            ),
            std::cmp::Ordering::Greater => format!(
                "The equation allows {} layers, {} more than fit: it counts the bytes tensors \
                 hold (allocated), while the card must also hold what the allocator keeps \
                 cached (reserved, {} at {} layers).",
                fit.equation_layers,
                fit.equation_layers - fit.layers,
                format_bytes(fit.step.peak_reserved),
                fit.layers
            ),
            std::cmp::Ordering::Less => format!(
                "The equation allows only {} layers, yet {} fit.",
                fit.equation_layers, fit.layers
            ),
        });
    }
    Ok(format!("{out}\n{}\n", remarks.join(" ")))
}

/// The widest hidden layers that fit on the card at batch 32 with SGD, for 1, 3 and 5 layers.
pub fn widest_on_card() -> Result<String> {
    use crate::charts::width::{BATCH, DEPTHS};
    let mut out = String::from(
        "| hidden layers | widest that fits (measured) | its peak allocated | the equation's widest |\n\
         | ---: | ---: | ---: | ---: |\n",
    );
    for (layers, _) in DEPTHS {
        let widest = data::widest_on_card(layers, BATCH)?
            .ok_or_else(|| anyhow!("no width fits with {layers} layers"))?;
        let peak = measure(
            &on_card(),
            &network(widest, layers, Optimizer::LESSON),
            BATCH,
        )?;
        let by_equation = data::widest_by_equation(layers, BATCH)?.unwrap_or(0);
        writeln!(
            out,
            "| {layers} | {} | {} | {} |",
            grouped(widest),
            format_bytes(peak.peak_allocated),
            grouped(by_equation)
        )?;
    }
    Ok(format!(
        "At a batch of {BATCH} rows with SGD on the {} card:\n\n{out}",
        format_bytes(card())
    ))
}

/// Every figure's alt text, as a list.
pub fn figure_alts() -> Result<String> {
    let mut out =
        String::from("Alt text of the book's figures (from `crates/figures/src/alts.rs`):\n\n");
    for (name, alt) in alts::figures()? {
        writeln!(out, "- `{name}.svg`: {alt}")?;
    }
    Ok(out)
}

/// `15.90 GiB`.
pub fn card_capacity() -> Result<String> {
    Ok(format_bytes(card()))
}

/// The full training set's predicted peak, e.g. `17.50 GiB`.
pub fn full_batch_peak() -> Result<String> {
    Ok(format_bytes(
        equation(&MlpConfig::lesson(LESSON_WIDTH), FULL)?.peak_allocated,
    ))
}

/// What the failing full-batch step tried to allocate, e.g. `8.74 GiB`.
pub fn full_batch_tried() -> Result<String> {
    let step = measure(&on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card"))?;
    Ok(format_bytes(oom.tried))
}

/// The largest batch of the lesson's network that fits on the card, e.g. `710 410`.
pub fn largest_batch_on_card() -> Result<String> {
    Ok(grouped(largest_batch()?.rows))
}

pub fn deepest_sgd() -> Result<String> {
    Ok(data::deepest_fit(Optimizer::LESSON)?.layers.to_string())
}

pub fn deepest_adam() -> Result<String> {
    Ok(data::deepest_fit(data::adam())?.layers.to_string())
}

/// The largest batch of the lesson's network that fits on the card, and its step.
fn largest_batch() -> Result<LargestBatch> {
    data::largest_batch_on_card(LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the card"))
}

/// The full training set as one batch of the lesson's network, on the card: its error.
fn full_batch_error() -> Result<OutOfMemory> {
    measure(&on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card: challenge 1 is moot"))
}

/// A message as a text block.
fn text_block(message: impl std::fmt::Display) -> String {
    format!("```text\n{message}\n```\n")
}

/// Challenge 1's out-of-memory message alone, as a text block.
pub fn full_batch_oom() -> Result<String> {
    Ok(text_block(full_batch_error()?))
}

/// `memory_allocated()` when the full batch ran out, e.g. `8.75 GiB`.
pub fn full_batch_allocated() -> Result<String> {
    Ok(format_bytes(full_batch_error()?.allocated))
}

/// The free bytes the full batch's message reports (capacity − reserved on the card).
pub fn full_batch_free() -> Result<String> {
    let free = full_batch_error()?
        .free
        .ok_or_else(|| anyhow!("the emulated card reports no free bytes"))?;
    Ok(format_bytes(free))
}

/// `memory_reserved()` when the full batch ran out.
pub fn full_batch_reserved() -> Result<String> {
    Ok(format_bytes(full_batch_error()?.reserved))
}

/// The full batch's features and labels on the card, e.g. `13.42 MiB`.
pub fn full_batch_input() -> Result<String> {
    Ok(format_bytes(
        equation(&MlpConfig::lesson(LESSON_WIDTH), FULL)?.input_batch,
    ))
}

/// The step at the largest batch that fits: its peak allocated.
pub fn largest_batch_peak_allocated() -> Result<String> {
    Ok(format_bytes(largest_batch()?.step.peak_allocated))
}

/// The step at the largest batch that fits: its peak reserved.
pub fn largest_batch_peak_reserved() -> Result<String> {
    Ok(format_bytes(largest_batch()?.step.peak_reserved))
}

/// The first batch whose step needs a third segment the size of an activation.
pub fn reserved_jump_batch() -> Result<String> {
    Ok(grouped(data::reserved_jump_batch()?))
}

/// The two commands that show the jump: one row below it, and at it.
pub fn reserved_jump_commands() -> Result<String> {
    let jump = data::reserved_jump_batch()?;
    Ok(format!(
        "```sh\n\
         cargo run -p challenge1 -- --backend plan --batch {}\n\
         cargo run -p challenge1 -- --backend plan --batch {jump}\n\
         ```\n",
        jump - 1
    ))
}

/// Challenge 2's out-of-memory message at one layer too many (SGD), as a text block.
pub fn challenge2_oom() -> Result<String> {
    Ok(text_block(data::deepest_fit(Optimizer::LESSON)?.oom))
}

/// The lesson's "about 5 hidden layers of 5000": what they need at batch 32 with SGD and
/// with Adam, and their share of the card.
pub fn lesson_five_layers() -> Result<String> {
    const LESSON_LAYERS: u64 = 5;
    let share = |o: Optimizer| -> Result<(u64, String)> {
        let peak = equation(&network(DEEP_WIDTH, LESSON_LAYERS, o), DEEP_BATCH)?.peak_allocated;
        let percent = 100.0 * peak as f64 / card() as f64;
        Ok((peak, format!("{percent:.0}\u{a0}%")))
    };
    let (sgd, sgd_share) = share(Optimizer::LESSON)?;
    let (adam, adam_share) = share(data::adam())?;
    Ok(format!(
        "{} with SGD and {} with Adam: {sgd_share} and {adam_share} of the {} card",
        format_bytes(sgd),
        format_bytes(adam),
        format_bytes(card())
    ))
}

/// What each extra hidden layer of 5000 adds to the step's peak at batch 32 with SGD.
pub fn per_layer_bytes() -> Result<String> {
    let peak = |layers: u64| -> Result<u64> {
        Ok(equation(&network(DEEP_WIDTH, layers, Optimizer::LESSON), DEEP_BATCH)?.peak_allocated)
    };
    Ok(format_bytes(peak(2)? - peak(1)?))
}

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
    let per_epoch = spec.samples.div_ceil(spec.batch);
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
    let (hidden, samples, batch) = (setup.model.hidden, setup.model.samples, setup.batch());
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
         | remedy | outcome | peak reserved | segment allocations | segment frees |\n\
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
        let name = format!("`{}`{}", remedy.code, remedy.when);
        let label = match (
            remedy.allocator.max_split_size,
            remedy.allocator.gc_threshold,
        ) {
            (Some(bytes), _) => format!("{name} {}", format_bytes(bytes)),
            (_, Some(threshold)) => format!("{name} {threshold}"),
            _ => name,
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

/// What a demo prints for `args` (the program's name first), run from its library: the
/// instructor page's transcripts. Only for runs that print the same on every machine (on the
/// `plan` backing, no timings).
fn transcript(run: impl FnOnce() -> Result<()>) -> Result<String> {
    let (result, text) = demo::capture(run);
    result?;
    Ok(text)
}

/// `cargo run -p challenge1 -- --backend plan`, as it prints.
pub fn demo_challenge1() -> Result<String> {
    transcript(|| challenge1::run(["challenge1", "--backend", "plan"]))
}

/// `cargo run -p challenge2 -- --backend plan`, as it prints.
pub fn demo_challenge2() -> Result<String> {
    transcript(|| challenge2::run(["challenge2", "--backend", "plan"]))
}

/// Challenge 4's deeper setup: Challenge 1's full batch with this many hidden layers, where
/// checkpointing has layers to drop (`cargo run -p challenge4 -- --layers 9`).
pub const CHALLENGE4_DEEP_LAYERS: u64 = 9;

/// [`CHALLENGE4_DEEP_LAYERS`], for the pages' `-- --layers N`.
pub fn challenge4_deep_layers() -> Result<String> {
    Ok(CHALLENGE4_DEEP_LAYERS.to_string())
}

/// Challenge 4 on its default setup, Challenge 1's full batch.
pub fn challenge4_strategies() -> Result<String> {
    strategies_table(
        &MlpConfig::lesson(LESSON_WIDTH),
        FULL,
        "cargo run -p challenge4",
        true,
    )
}

/// Challenge 4 on Challenge 1's full batch with [`CHALLENGE4_DEEP_LAYERS`] hidden layers.
pub fn challenge4_deep() -> Result<String> {
    strategies_table(
        &MlpConfig::lesson(LESSON_WIDTH).with_layers(CHALLENGE4_DEEP_LAYERS),
        FULL,
        &format!("cargo run -p challenge4 -- --layers {CHALLENGE4_DEEP_LAYERS}"),
        false,
    )
}

/// Every strategy alone, then the cheapest combination that fits (and the cheapest that keeps
/// float32), one update of `rows` rows planned at full size by the demo's own code
/// (`challenge4::strategies`) — the memory half of `command`'s table. No times: they are
/// measurements, not plans. With `explain`, a last sentence gives the engine's order of
/// "cheapest".
fn strategies_table(base: &MlpConfig, rows: u64, command: &str, explain: bool) -> Result<String> {
    use challenge4::strategies::{self, Accumulation, Planner, Row, precision_name};
    use gpumem::fit::{CHEAPEST_RULE, checkpointing_has_effect};
    use gpumem::mlp::{Checkpointing, Precision, Strategy};
    let (f32, sqrt) = (Precision::Float32, Checkpointing::Sqrt);
    let plan = Planner::new(card());
    // The demo's defaults: float32, `--accumulation auto`, `--checkpoint sqrt`.
    let k = strategies::micro_batches(&plan, base, rows, f32, Accumulation::Auto, sqrt)?;
    let mut out = format!(
        "`{command}`: {} hidden layer{} of {} (SGD), one update of {} rows on the {} card, \
         planned at full size on `plan`:\n\n\
         | strategy | micro-batches × rows | peak allocated | fits? | layers recomputed |\n\
         | :--- | ---: | ---: | :--- | ---: |\n",
        base.layers,
        if base.layers == 1 { "" } else { "s" },
        grouped(base.hidden),
        grouped(rows),
        format_bytes(card()),
    );
    let write = |out: &mut String, mut row: Row| -> Result<()> {
        row.plan(&plan, base, rows)?;
        writeln!(
            out,
            "| {} | {}\u{a0}×\u{a0}{} | {} | {} | {} |",
            row.name,
            row.micro_batches,
            grouped(row.micro_batch_rows),
            format_bytes(row.peak_allocated),
            if row.fits { "yes" } else { "no" },
            row.recomputed_layers
        )?;
        Ok(())
    };
    // The demo's rows of the plain step and of each strategy alone, named as the pages do.
    let strategies_on = |s: &Strategy| {
        usize::from(s.precision != f32)
            + usize::from(s.accumulation > 1)
            + usize::from(s.checkpointing != Checkpointing::Off)
    };
    let alone = strategies::rows(base, f32, k, sqrt)
        .into_iter()
        .filter(|r| strategies_on(&r.strategy) <= 1);
    for mut row in alone {
        // The demo's names ("none (float32)", "float64", "mixed precision"), but for
        // accumulation and checkpointing, which the pages word their own way.
        let s = row.strategy;
        if s.accumulation > 1 {
            row.name = format!("gradient accumulation\u{a0}×{k}");
        } else if s.checkpointing != Checkpointing::Off {
            row.name = if checkpointing_has_effect(s.checkpointing, base.layers) {
                format!(
                    "checkpointing, segments of ⌈√{}⌉\u{a0}=\u{a0}{}",
                    base.layers,
                    s.checkpointing.segment(base.layers)
                )
            } else {
                format!(
                    "checkpointing (nothing to drop with {} hidden layer{})",
                    base.layers,
                    if base.layers == 1 { "" } else { "s" }
                )
            };
        }
        write(&mut out, row)?;
    }
    let cheapest = strategies::cheapest(&plan, base, rows, sqrt)?;
    let best = cheapest
        .best
        .ok_or_else(|| anyhow!("no strategy fits `{command}`"))?;
    let best32 = cheapest.float32.filter(|f| f.strategy != best.strategy);
    let words = |s: &Strategy| {
        let accumulation = if s.accumulation > 1 {
            format!(" + accumulation\u{a0}×{}", s.accumulation)
        } else {
            String::new()
        };
        let checkpointing = if checkpointing_has_effect(s.checkpointing, base.layers) {
            format!(
                " + checkpointing every {}",
                s.checkpointing.segment(base.layers)
            )
        } else {
            String::new()
        };
        format!(
            "{}{accumulation}{checkpointing}",
            precision_name(s.precision)
        )
    };
    let name = format!("**the cheapest that fits**: {}", words(&best.strategy));
    write(&mut out, Row::new(&name, best.strategy))?;
    if let Some(f) = best32 {
        let name = format!("the cheapest in float32: {}", words(&f.strategy));
        write(&mut out, Row::new(&name, f.strategy))?;
    }
    if explain {
        writeln!(
            out,
            "\n\"Cheapest\", as the engine's `gpumem::fit` orders them: {CHEAPEST_RULE}."
        )?;
    }
    Ok(out)
}

/// Challenge 4's recorded times: for each setup, every strategy's planned peak and its time
/// per epoch on each backing, with the machine, the date and the command that measured them.
pub fn challenge4_times() -> Result<String> {
    use crate::measured::{self, distinct, planned_rows};
    let record = measured::load()?;
    let mut out = String::new();
    for setup in &record.setups {
        let runs = &setup.runs;
        let Some(first) = runs.first() else {
            continue;
        };
        writeln!(
            out,
            "`cargo run --release -p challenge4 -- {}`, each strategy timed on a sample of {} \
             rows (1 epoch, one update per epoch):\n",
            first.args[2..].join(" "),
            grouped(first.sample_rows)
        )?;
        let mut header = "| strategy | peak allocated (full size) | fits? |".to_string();
        let mut rule = "| :--- | ---: | :--- |".to_string();
        for run in runs {
            write!(header, " {}: time per epoch | vs none |", run.backend)?;
            rule.push_str(" ---: | ---: |");
        }
        writeln!(out, "{header}\n{rule}")?;
        for row in planned_rows(setup.layers)?
            .iter()
            .filter(|r| distinct(r, setup.layers))
        {
            write!(
                out,
                "| {} | {} | {} |",
                row.name,
                format_bytes(row.peak_allocated),
                if row.fits { "yes" } else { "no" }
            )?;
            for run in runs {
                let times = run.rows.iter().find(|r| r.name == row.name);
                match times.and_then(|t| t.seconds_per_epoch.zip(t.relative_to_none)) {
                    Some((s, r)) => write!(out, " {s:.2} s | ×{r:.2} |")?,
                    None => write!(out, " not measured | — |")?,
                }
            }
            writeln!(out)?;
        }
        writeln!(out)?;
    }
    let devices: Vec<String> = record
        .setups
        .iter()
        .flat_map(|s| s.runs.iter())
        .map(|r| format!("{}: {}", r.backend, r.device))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    writeln!(
        out,
        "Measured on {} ({}), {}, by `{}`. Peaks are planned afresh every time the book's \
         figures are generated; the times are this one measurement.",
        record.machine,
        devices.join("; "),
        record.date,
        record.command
    )?;
    Ok(out)
}

/// The instructors' commands, as timed by `figures -- --measure`: the table of the
/// instructors' page, with the machine and the date.
pub fn demo_times() -> Result<String> {
    let record = crate::measured::load()?;
    let mut out = String::from("| command | wall time |\n| :--- | ---: |\n");
    for d in &record.demos {
        let place = if d.dir == "." {
            String::new()
        } else {
            format!("`cd {}`, then ", d.dir)
        };
        let note = if d.success {
            ""
        } else {
            " (fails: the exercise is unsolved)"
        };
        writeln!(out, "| {place}`{}`{note} | {:.1} s |", d.command, d.seconds)?;
    }
    // The 1-minute load averages.
    let loads: Vec<f64> = record
        .demos
        .iter()
        .filter_map(|d| d.load_average.split_whitespace().next()?.parse().ok())
        .collect();
    writeln!(
        out,
        "\nMeasured on {}, {}, by `{}`: the debug build, already built, the median of 3 \
         runs (1 for runs over 5 s), with a 1-minute load average of {:.2} to {:.2} before each.",
        record.machine,
        record.date,
        record.command,
        loads.iter().copied().fold(f64::INFINITY, f64::min),
        loads.iter().copied().fold(0.0, f64::max),
    )?;
    Ok(out)
}
