//! Challenge 4 (`challenge-4.md`): each strategy's planned peak and recorded times.

use crate::data::LESSON_WIDTH;
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// [`crate::measured::CHALLENGE4_DEEP_LAYERS`], for the pages' `-- --layers N`.
pub fn challenge4_deep_layers() -> Result<String> {
    Ok(crate::measured::CHALLENGE4_DEEP_LAYERS.to_string())
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

/// Challenge 4 on Challenge 1's full batch with [`crate::measured::CHALLENGE4_DEEP_LAYERS`] hidden layers.
pub fn challenge4_deep() -> Result<String> {
    strategies_table(
        &MlpConfig::lesson(LESSON_WIDTH).with_layers(crate::measured::CHALLENGE4_DEEP_LAYERS),
        FULL,
        &format!(
            "cargo run -p challenge4 -- --layers {}",
            crate::measured::CHALLENGE4_DEEP_LAYERS
        ),
        false,
    )
}

/// Every strategy alone, then the cheapest combination that fits (and the cheapest that keeps
/// float32), one update of `rows` rows planned at full size by the demo's own code
/// (`demos::challenge4::strategies`) — the memory half of `command`'s table. No times: they are
/// measurements, not plans. With `explain`, a last sentence gives the engine's order of
/// "cheapest".
fn strategies_table(base: &MlpConfig, rows: u64, command: &str, explain: bool) -> Result<String> {
    use demos::challenge4::strategies::{self, Accumulation, Planner, Row, precision_name};
    use gpumem::fit::{CHEAPEST_RULE, checkpointing_has_effect};
    use gpumem::mlp::{Checkpointing, Precision, Strategy};
    let (f32, sqrt) = (Precision::Float32, Checkpointing::Sqrt);
    let plan = Planner::new(CARD_BYTES);
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
        format_bytes(CARD_BYTES),
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
        let epochs = crate::measured::time_epochs(&first.args);
        writeln!(
            out,
            "`cargo run --release -p challenge4 -- {}`, each strategy timed on a sample of {} \
             rows (the mean of {epochs} epoch{}, one update per epoch):\n",
            first.args[2..].join(" "),
            grouped(first.sample_rows),
            if epochs == 1 { "" } else { "s" }
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

/// Why float32 needs the micro-batches it needs on the full batch: one fewer, and what the
/// card says then (a fragmented cache, or simply too little memory).
pub fn challenge4_fewer() -> Result<String> {
    use gpumem::fit::{fewest_micro_batches, measure_update, with_micro_batches};
    use gpumem::lesson::{planning_on_card, planning_unlimited};
    let base = MlpConfig::lesson(LESSON_WIDTH);
    let (k, _) = fewest_micro_batches(&planning_on_card(), &base, FULL)?
        .ok_or_else(|| anyhow!("no number of micro-batches fits the full batch"))?;
    if k < 2 {
        return Err(anyhow!("the full batch fits in one micro-batch"));
    }
    let fewer = with_micro_batches(&base, k - 1);
    let peak = measure_update(&planning_unlimited(), &fewer, FULL, 0)?.peak_allocated;
    let first = format!(
        "In float32 the full batch needs {k} micro-batches. With {}, the update's peak \
         allocated is {}",
        k - 1,
        format_bytes(peak)
    );
    Ok(match crate::fragmented::fragmented_step(&fewer, FULL)? {
        Some(f) if peak <= CARD_BYTES => format!(
            "{first}, less than the card's {}, yet it runs out in the {} allocating `{}`, with \
             {} cached but unused: the cache is fragmented, as on the \
             [Inside the caching allocator](allocator.md#allocated-is-not-the-whole-story) page.",
            format_bytes(CARD_BYTES),
            f.pass,
            f.oom.label,
            format_bytes(f.oom.cached_unused())
        ),
        _ => format!(
            "{first}: more than the card's {}.",
            format_bytes(CARD_BYTES)
        ),
    })
}

/// What the recorded times say, for each timed setup and backing: the fastest strategy that
/// fits among every timed row (the demo's recommendations included), against the demo's
/// "cheapest" and "cheapest in float32", on the device named — so the page's advice follows
/// the measurement, and says where the rule and the measurement disagree.
pub fn challenge4_time_advice() -> Result<String> {
    let record = crate::measured::load()?;
    let mut out = String::new();
    for setup in &record.setups {
        let (planned, cheapest) = crate::measured::planned(setup.layers)?;
        let base = crate::measured::base(setup.layers);
        let name_of = |fit: Option<&gpumem::fit::Fit>| {
            fit.and_then(|f| demos::challenge4::strategies::row_of(&planned, &f.strategy, &base))
                .map(|r| r.name.clone())
        };
        let best = name_of(cheapest.best.as_ref());
        let best32 = name_of(cheapest.float32.as_ref()).filter(|n| Some(n) != best.as_ref());
        for run in &setup.runs {
            let time = |name: &str| {
                let row = run.rows.iter().find(|r| r.name == name)?;
                row.relative_to_none
            };
            let fastest = planned
                .iter()
                .filter(|p| p.fits)
                .filter_map(|p| Some((p.name.as_str(), time(&p.name)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let Some((fastest, ratio)) = fastest else {
                continue;
            };
            write!(
                out,
                "- {} hidden layer{}, on the `{}` backing ({}): the fastest setup that fits was \
                 **{}** (×{ratio:.2} the time of none)",
                setup.layers,
                if setup.layers == 1 { "" } else { "s" },
                run.backend,
                device_words(&run.backend, &run.device),
                plain(fastest)
            )?;
            // Which of the demo's recommendations was the fastest, then how the others did;
            // the first named is "the demo's", the next "its".
            let recommended = [("cheapest", &best), ("cheapest in float32", &best32)];
            let (mut named, mut others) = (0, Vec::new());
            let mut whose = || {
                named += 1;
                if named == 1 { "the demo's" } else { "its" }
            };
            for (what, name) in recommended {
                if name.as_deref() == Some(fastest) {
                    write!(out, ", {} {what} itself", whose())?;
                }
            }
            for (what, name) in recommended {
                let Some(name) = name.as_deref().filter(|n| *n != fastest) else {
                    continue;
                };
                others.push(match time(name) {
                    Some(t) => format!("{} {what}, {}, took ×{t:.2}", whose(), plain(name)),
                    None => format!("{} {what}, {}, was not timed", whose(), plain(name)),
                });
            }
            match others.is_empty() {
                true => writeln!(out, ".")?,
                false => writeln!(out, "; {}.", others.join("; "))?,
            }
        }
    }
    Ok(out)
}

/// A row's name without the demo's "cheapest …: " prefix (the sentence says which it is).
fn plain(name: &str) -> &str {
    use demos::challenge4::strategies::{CHEAPEST_FLOAT32_PREFIX, CHEAPEST_PREFIX};
    name.strip_prefix(CHEAPEST_PREFIX)
        .or_else(|| name.strip_prefix(CHEAPEST_FLOAT32_PREFIX))
        .unwrap_or(name)
}

/// The device a run was timed on, in words that say whether it is a GPU: the `cpu` backing is
/// the processor; Mesa's llvmpipe (lavapipe) is a Vulkan driver that runs on the processor too.
fn device_words(backend: &str, device: &str) -> String {
    if backend == "cpu" {
        "the processor, not a GPU".to_string()
    } else if device.contains("llvmpipe") {
        format!("{device}: Mesa's software Vulkan driver, on the processor, not a GPU")
    } else {
        device.to_string()
    }
}
