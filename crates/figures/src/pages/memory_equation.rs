//! What lives in GPU memory (`memory-equation.md`: the full batch's peak) and Inside the
//! caching allocator (`allocator.md`: the equation against measured steps and against
//! PyTorch, the step's tape).

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
        "| layers × width, optimizer | batch | the equation (bytes) | measured (bytes) | difference |\n\
         | :--- | ---: | ---: | ---: | ---: |\n",
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
            "| {}\u{a0}×\u{a0}{}, {}{} | {} | {} | {} | {} |",
            config.layers,
            grouped(config.hidden),
            optimizer_name(&config.optimizer),
            if exact { "" } else { "\u{a0}†" },
            grouped(*batch),
            grouped(predicted),
            grouped(measured),
            if diff == 0 {
                "0".to_string()
            } else {
                format!("**{sign}{}**", grouped(diff))
            },
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
         after two steps on the `plan` backing; difference: measured − equation; †: outside \
         the domain where `is_exact` says the equation is exact. Inside it the equation and the measurement agree to the byte on {} \
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
    let names = |v: &[(String, u64)]| {
        v.iter()
            .map(|(n, _)| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // One figure where the two agree, both (PyTorch's first) where they do not.
    let alive = |t: u64, e: u64| {
        if t == e {
            grouped(t)
        } else {
            format!("{} / {}", grouped(t), grouped(e))
        }
    };
    let freed = |v: &[(String, u64)]| {
        if v.is_empty() {
            String::new()
        } else {
            format!("<br>then freed: {}", names(v))
        }
    };
    let mut out = String::from(
        "| PyTorch's op: the tensor it makes | the engine's tensor (and what is freed before the next) | bytes alive after it |\n\
         | :--- | :--- | ---: |\n",
    );
    writeln!(
        out,
        "| `zero_grad()` | {} | {} |",
        freed(&engine.zero_grad).trim_start_matches("<br>"),
        alive(torch.live_after_zero_grad, engine.live_after_zero_grad),
    )?;
    if let Some((batch, bytes, after)) = &engine.batch {
        writeln!(
            out,
            "| the batch: {} B, made before step 1 | {}, made every step | {} |",
            grouped(*bytes),
            names(&batch.iter().map(|n| (n.clone(), 0)).collect::<Vec<_>>()),
            alive(torch.live_after_zero_grad, *after)
        )?;
    }
    let peak = engine.peak();
    for i in 0..torch.rows.len().max(engine.rows.len()) {
        let (t, e) = (torch.rows.get(i), engine.rows.get(i));
        let figure = match (t, e) {
            (Some(t), Some(e)) => alive(t.live, e.live),
            (Some(t), None) => format!("{} / —", grouped(t.live)),
            (None, Some(e)) => format!("— / {}", grouped(e.live)),
            (None, None) => String::new(),
        };
        let figure = if Some(i) == peak {
            format!("**{figure}**")
        } else {
            figure
        };
        writeln!(
            out,
            "| {} | {} | {figure} |",
            t.map_or(String::new(), |t| format!(
                "`{}`: {}, {} B",
                t.op,
                t.made,
                grouped(t.bytes)
            )),
            e.map_or(String::new(), |e| format!(
                "`{}`, {} B{}",
                e.made,
                grouped(e.bytes),
                freed(&e.freed)
            )),
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
    // The same bytes freed after each tensor (PyTorch's trace lists a moment's frees in its
    // own order).
    let sizes = |v: &[(String, u64)]| {
        let mut b: Vec<u64> = v.iter().map(|(_, b)| *b).collect();
        b.sort_unstable();
        b
    };
    let frees_differ = engine
        .rows
        .iter()
        .zip(&torch.rows)
        .filter(|(e, t)| sizes(&e.freed) != sizes(&t.freed))
        .count();
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
    if live_differs == 0 && frees_differ == 0 {
        out.push_str(
            ", free the same tensors at the same moments, and the bytes alive agree after \
             every one of them.",
        );
    } else {
        write!(
            out,
            "; the bytes alive differ after {live_differs} of them, what is freed after \
             {frees_differ}."
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
