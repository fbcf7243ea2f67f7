//! What lives in GPU memory (`memory-equation.md`): the equation against measured steps and
//! against PyTorch, the step's tape, and the full batch's peak.

use crate::data::{LESSON_WIDTH, equation, measure, optimizer_name};
use crate::style::grouped;
use crate::tape::{self, Step};
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::estimate::{band_margin, is_exact, reference_setups, requested_peak};
use gpumem::lesson::{planning_on_card, planning_unlimited};
use gpumem::measure::measure_step;
use gpumem::mlp::{MlpConfig, Optimizer, OptimizerImpl};
use gpumem::pytorch::{FIXTURE, Fixture};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// Every `reference_setups()` entry: the equation's peak against two measured steps on
/// plan, whether the setup is in `is_exact`'s domain, and the raw bytes.
pub fn estimate_table() -> Result<String> {
    let mut out = String::from(
        "| layers × width | batch | optimizer | the equation (bytes) | measured (bytes) | difference | in the exact domain |\n\
         | :--- | ---: | :--- | ---: | ---: | ---: | :---: |\n",
    );
    let setups = reference_setups();
    let (mut inside, mut inside_equal, mut outside) = (0, 0, 0);
    let (mut worst, mut worst_margin, mut raw_equal) = (0u64, 0u64, 0);
    for (config, batch) in &setups {
        let predicted = equation(config, *batch)?.peak_allocated;
        let step = measure(&planning_unlimited(), config, *batch)?;
        let measured = step.peak_allocated;
        raw_equal += usize::from(requested_peak(config, *batch)? == step.peak_requested);
        let exact = is_exact(config, *batch);
        let diff = predicted.abs_diff(measured);
        if exact {
            inside += 1;
            inside_equal += usize::from(diff == 0);
        } else {
            outside += 1;
            if diff >= worst {
                (worst, worst_margin) = (diff, band_margin(config));
            }
        }
        let sign = if measured > predicted { "+" } else { "−" };
        writeln!(
            out,
            "| {}\u{a0}×\u{a0}{} | {} | {} | {} | {} | {} | {} |",
            config.layers,
            grouped(config.hidden),
            grouped(*batch),
            optimizer_name(&config.optimizer),
            grouped(predicted),
            grouped(measured),
            if diff == 0 {
                "0".to_string()
            } else {
                format!("**{sign}{}**", grouped(diff))
            },
            if exact { "yes" } else { "no" },
        )?;
    }
    let all = |n: usize, of: usize| {
        if n == of {
            format!("all {of}")
        } else {
            format!("{n} of {of}")
        }
    };
    let mut verdict = format!(
        "Layers × width: hidden layers and their width. Measured: `max_memory_allocated()` \
         after two steps on the `plan` backing; difference: measured − equation. Inside the \
         exact domain (`is_exact`) the equation and the measurement agree to the byte on {} \
         setups.",
        all(inside_equal, inside)
    );
    if outside > 0 {
        write!(
            verdict,
            " Outside it ({outside} setups) the largest difference is {} bytes, where \
             `band_margin` allows {}.",
            grouped(worst),
            grouped(worst_margin)
        )?;
    }
    write!(
        verdict,
        " The raw bytes the tensors ask for (`requested_peak`) equal the engine's peak of \
         requested bytes on {} setups.",
        all(raw_equal, setups.len())
    )?;
    Ok(format!("{out}\n{verdict}\n"))
}

/// The engine against PyTorch's own step: every setup of the committed fixture planned on
/// the engine, its peak of requested bytes beside PyTorch's peak of raw tensor bytes.
pub fn pytorch_fixture() -> Result<String> {
    let fixture = Fixture::load(std::path::Path::new(FIXTURE)).map_err(|e| anyhow!(e))?;
    let (mut equal, mut step_counts, mut other, mut skipped) = (0, 0, Vec::new(), 0);
    for setup in &fixture.setups {
        let Ok(config) = setup.config() else {
            skipped += 1;
            continue;
        };
        let engine = measure_step(&planning_unlimited(), &config, setup.batch, 0)?.peak_requested;
        // Non-fused Adam keeps a 4-byte `step` per parameter tensor, on the CPU under CUDA.
        let cpu_steps = match (config.optimizer, config.strategy.optimizer_impl) {
            (Optimizer::Adam { .. }, OptimizerImpl::Foreach | OptimizerImpl::ForLoop) => {
                4 * 2 * (config.layers + 1)
            }
            _ => 0,
        };
        if engine == setup.peak_bytes {
            equal += 1;
        } else if cpu_steps > 0 && setup.peak_bytes - engine.min(setup.peak_bytes) == cpu_steps {
            step_counts += 1;
        } else {
            other.push(setup.name.clone());
        }
    }
    let compared = equal + step_counts + other.len();
    let mut out = format!(
        "Of the {} setups in PyTorch's fixture (torch {}), the engine expresses {compared}; \
         its peak of requested bytes equals PyTorch's peak to the byte on {equal}, and on \
         {step_counts} more (non-fused Adam) it is lower by exactly Adam's 4-byte `step` \
         counts, which PyTorch keeps on the CPU when the parameters are on a GPU.",
        fixture.setups.len(),
        fixture.torch_version,
    );
    if skipped > 0 {
        write!(
            out,
            " The {skipped} left out use CPU autocast's loss policy; their CUDA twins are compared."
        )?;
    }
    if !other.is_empty() {
        write!(out, " **Different**: {}.", other.join(", "))?;
    }
    Ok(format!("{out}\n"))
}

/// The step's tape: the engine's step 2 beside PyTorch's, allocation by allocation.
pub fn step_tape() -> Result<String> {
    let (engine, torch) = (tape::engine_step()?, tape::pytorch_step()?);
    let names = |v: &[(String, u64)], code: bool| {
        v.iter()
            .map(|(n, _)| if code { format!("`{n}`") } else { n.clone() })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::from(
        "| PyTorch's op | PyTorch makes | the engine makes | bytes | alive after it: PyTorch | alive after it: engine | then freed: PyTorch | then freed: engine |\n\
         | :--- | :--- | :--- | ---: | ---: | ---: | :--- | :--- |\n",
    );
    writeln!(
        out,
        "| `zero_grad()` | | | | {} | {} | {} | {} |",
        grouped(torch.live_after_zero_grad),
        grouped(engine.live_after_zero_grad),
        names(&torch.zero_grad, false),
        names(&engine.zero_grad, true)
    )?;
    if let Some((batch, bytes, after)) = &engine.batch {
        writeln!(
            out,
            "| (the batch) | made once, before step 1 | {}, made at every step | {} | {} | {} | | |",
            batch
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            grouped(*bytes),
            grouped(torch.live_after_zero_grad),
            grouped(*after)
        )?;
    }
    let peak = engine.peak();
    let rows = torch.rows.len().max(engine.rows.len());
    for i in 0..rows {
        let (t, e) = (torch.rows.get(i), engine.rows.get(i));
        let bold = |s: String| {
            if Some(i) == peak && !s.is_empty() {
                format!("**{s}**")
            } else {
                s
            }
        };
        let bytes = match (t, e) {
            (Some(t), Some(e)) if t.bytes == e.bytes => grouped(t.bytes),
            (t, e) => format!(
                "{} / {}",
                t.map_or("—".into(), |t| grouped(t.bytes)),
                e.map_or("—".into(), |e| grouped(e.bytes))
            ),
        };
        writeln!(
            out,
            "| {} | {} | {} | {bytes} | {} | {} | {} | {} |",
            t.map_or(String::new(), |t| format!("`{}`", t.op)),
            t.map_or(String::new(), |t| t.made.clone()),
            e.map_or(String::new(), |e| format!("`{}`", e.made)),
            bold(t.map_or(String::new(), |t| grouped(t.live))),
            bold(e.map_or(String::new(), |e| grouped(e.live))),
            t.map_or(String::new(), |t| names(&t.freed, false)),
            e.map_or(String::new(), |e| names(&e.freed, true)),
        )?;
    }
    Ok(format!("{out}\n{}\n", tape_verdict(&engine, &torch)?))
}

/// What the two traces of [`step_tape`] share, in words.
fn tape_verdict(engine: &Step, torch: &Step) -> Result<String> {
    let same_sizes = engine.rows.len() == torch.rows.len()
        && engine
            .rows
            .iter()
            .zip(&torch.rows)
            .all(|(e, t)| e.bytes == t.bytes);
    let live_differs = engine
        .rows
        .iter()
        .zip(&torch.rows)
        .filter(|(e, t)| e.live != t.live)
        .count();
    let mut out = if same_sizes {
        format!(
            "Both make the same {} tensors in the same order, each of the same size",
            engine.rows.len()
        )
    } else {
        format!(
            "**The two differ**: PyTorch makes {} tensors, the engine {}",
            torch.rows.len(),
            engine.rows.len()
        )
    };
    if live_differs == 0 {
        out.push_str(", and the bytes alive agree after every one of them.");
    } else {
        write!(
            out,
            "; the bytes alive differ after {live_differs} of them."
        )?;
    }
    let (Some(e), Some(t)) = (
        engine.peak().map(|i| &engine.rows[i]),
        torch.peak().map(|i| &torch.rows[i]),
    ) else {
        return Err(anyhow!("a step that makes no tensor"));
    };
    write!(
        out,
        " The step's peak, {} bytes, comes right after `{}` makes {} (the engine's `{}`)",
        grouped(e.live),
        t.op,
        t.made.split_whitespace().next().unwrap_or_default(),
        e.made
    )?;
    if t.live != e.live {
        write!(out, " (PyTorch's: {} bytes)", grouped(t.live))?;
    }
    let hidden = tape::BATCH * tape::WIDTH * 4;
    let wide: Vec<String> = engine
        .alive_at_peak
        .iter()
        .filter(|(_, b)| *b == hidden)
        .map(|(n, _)| format!("`{n}`"))
        .collect();
    write!(
        out,
        ". Alive then: {}. {} of them are `{}\u{a0}×\u{a0}{}` tensors: {}.",
        names_with_bytes(&engine.alive_at_peak),
        count_word(wide.len()),
        tape::BATCH,
        tape::WIDTH,
        wide.join(", ")
    )?;
    Ok(out)
}

fn names_with_bytes(v: &[(String, u64)]) -> String {
    v.iter()
        .map(|(n, b)| format!("`{n}` ({} B)", grouped(*b)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `Three`, `Two`, … for the start of a sentence.
fn count_word(n: usize) -> String {
    const WORDS: [&str; 7] = ["None", "One", "Two", "Three", "Four", "Five", "Six"];
    WORDS.get(n).map_or(n.to_string(), |w| w.to_string())
}

/// The full training set's predicted peak, e.g. `26.25 GiB`.
pub fn full_batch_peak() -> Result<String> {
    Ok(format_bytes(
        equation(&MlpConfig::lesson(LESSON_WIDTH), FULL)?.peak_allocated,
    ))
}

/// What the failing full-batch step tried to allocate, e.g. `8.74 GiB`.
pub fn full_batch_tried() -> Result<String> {
    let step = measure(&planning_on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card"))?;
    Ok(format_bytes(oom.tried))
}
