//! The step, tensor by tensor: the engine's allocator trace of the steady-state step of a
//! small lesson-shaped network, beside PyTorch's own op-by-op trace of the same setup
//! (`reference/pytorch/trace_small.txt`, written by `reference/pytorch/step_peaks.py`).
//!
//! The two are lined up allocation by allocation: the i-th tensor the engine makes is set
//! beside the i-th tensor PyTorch makes, with what each frees before its next allocation and
//! the raw bytes alive after it (PyTorch's `live`, the engine's requested bytes).

use crate::data::SEED;
use anyhow::{Context, Result, anyhow};
use gpumem::alloc::EventKind;
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::{Device, DeviceOptions};

/// The traced setup: the lesson's network with 8 hidden neurons (2 → 8 → 2), SGD, batch 4.
pub const WIDTH: u64 = 8;
pub const BATCH: u64 = 4;
/// Its name in PyTorch's trace file.
pub const SETUP: &str = "2-8x1-2/b4/sgd";
/// PyTorch's trace, relative to the repository root.
pub const TRACE_PATH: &str = "reference/pytorch/trace_small.txt";

/// One allocation of the step, with the frees that follow it before the next allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The op that made it (PyTorch's aten name; empty for the engine's rows).
    pub op: String,
    /// What the tensor is called: PyTorch's `tN dtype[shape]`, or the engine's label.
    pub made: String,
    /// Raw bytes of the tensor.
    pub bytes: u64,
    /// Raw bytes alive right after it was made (the moments a peak can happen).
    pub live: u64,
    /// What was freed after it, before the next allocation, as names and sizes.
    pub freed: Vec<(String, u64)>,
}

/// One side's step 2: what `zero_grad()` freed first (and the bytes alive after it), then
/// every allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub zero_grad: Vec<(String, u64)>,
    pub live_after_zero_grad: u64,
    pub rows: Vec<Row>,
    /// Every tensor alive at the step's first peak, as names and sizes (the engine's only).
    pub alive_at_peak: Vec<(String, u64)>,
    /// The engine's upload of the batch at the start of the step: names, bytes, and the
    /// bytes alive after it (PyTorch's script makes the batch once, before the loop).
    pub batch: Option<(Vec<String>, u64, u64)>,
}

impl Step {
    /// The row after which the most bytes are alive (the first, if several).
    pub fn peak(&self) -> Option<usize> {
        let max = self.rows.iter().map(|r| r.live).max()?;
        self.rows.iter().position(|r| r.live == max)
    }
}

/// The traced network.
pub fn config() -> MlpConfig {
    MlpConfig::lesson(WIDTH)
}

/// The engine's step 2 (the steady state), from its allocator trace. The batch's upload
/// (`x`, `y`), which PyTorch's script does once before the loop, is left out of the rows;
/// the bytes alive count it from the moment it exists.
pub fn engine_step() -> Result<Step> {
    engine_step_on(&planning_unlimited())
}

fn engine_step_on(options: &DeviceOptions) -> Result<Step> {
    let device = Device::new(options)?;
    let mut mlp = Mlp::new(&device, &config(), SEED)?;
    mlp.train_step(Batch::Planned(BATCH))?;
    let mut live = device.memory_stats().requested_bytes.all.current;
    let mut alive: Vec<(u64, String, u64)> = device
        .snapshot()
        .into_iter()
        .filter(|b| b.allocated)
        .map(|b| (b.addr, b.label, b.requested))
        .collect();
    device.start_trace();
    mlp.train_step(Batch::Planned(BATCH))?;
    let trace = device.take_trace();
    let mut step = Step {
        zero_grad: Vec::new(),
        live_after_zero_grad: live,
        rows: Vec::new(),
        alive_at_peak: Vec::new(),
        batch: None,
    };
    let mut peak = 0;
    let mut batch_seen = false;
    for e in &trace.events {
        match e.kind {
            EventKind::Alloc => {
                live += e.requested;
                alive.push((e.addr, e.label.clone(), e.requested));
                if live > peak {
                    peak = live;
                    step.alive_at_peak = alive.iter().map(|(_, l, b)| (l.clone(), *b)).collect();
                }
                if e.label == "x" || e.label == "y" {
                    batch_seen = true;
                    let (names, bytes, after) = step.batch.get_or_insert((Vec::new(), 0, 0));
                    names.push(e.label.clone());
                    *bytes += e.requested;
                    *after = live;
                    continue;
                }
                step.rows.push(Row {
                    op: String::new(),
                    made: e.label.clone(),
                    bytes: e.requested,
                    freed: Vec::new(),
                    live,
                });
            }
            EventKind::Free => {
                live -= e.requested;
                alive.retain(|(addr, ..)| *addr != e.addr);
                let freed = (e.label.clone(), e.requested);
                match step.rows.last_mut() {
                    // The batch is freed when the step ends: after the rows, not one of them.
                    _ if e.label == "x" || e.label == "y" => {}
                    Some(row) => row.freed.push(freed),
                    None if !batch_seen => {
                        step.zero_grad.push(freed);
                        step.live_after_zero_grad = live;
                    }
                    None => return Err(anyhow!("a free before the step's first tensor")),
                }
            }
            _ => {}
        }
    }
    Ok(step)
}

/// PyTorch's step 2 of [`SETUP`], from the committed trace.
pub fn pytorch_step() -> Result<Step> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(TRACE_PATH);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse_step(&text, SETUP, 2).with_context(|| format!("{TRACE_PATH}, setup {SETUP}"))
}

/// Step `n` of `setup` in a trace written by `step_peaks.py --trace`.
pub fn parse_step(text: &str, setup: &str, n: u32) -> Result<Step> {
    let body = text
        .split("\n==== ")
        .find(|s| s.trim_start_matches("==== ").lines().next() == Some(setup))
        .ok_or_else(|| anyhow!("no setup {setup}"))?;
    let (start, end) = (format!("-- step {n} zero_grad"), format!("-- step {n} end"));
    let mut inside = false;
    let mut op = String::new();
    let mut step = Step {
        zero_grad: Vec::new(),
        live_after_zero_grad: 0,
        rows: Vec::new(),
        alive_at_peak: Vec::new(),
        batch: None,
    };
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with(&start) {
            inside = true;
            step.live_after_zero_grad = live_field(t)?;
            continue;
        }
        if !inside {
            continue;
        }
        if t.starts_with(&end) {
            return Ok(step);
        }
        if let Some(made) = t.strip_prefix("+ ") {
            // `t22 f32[4x8] 128 B from addmm in LessonNet.0   live 396`
            let words: Vec<&str> = made.split_whitespace().collect();
            let [name, shape, bytes, ..] = words[..] else {
                return Err(anyhow!("cannot read {t:?}"));
            };
            // A parameter's gradient, the batch, state: `…=2.weight.grad   live 624`.
            let what = made
                .rsplit_once("   live")
                .and_then(|(head, _)| head.rsplit_once('='))
                .map_or(String::new(), |(_, n)| format!(" = {n}"));
            step.rows.push(Row {
                op: op.clone(),
                made: format!("{name} {shape}{what}"),
                bytes: bytes.parse()?,
                freed: Vec::new(),
                live: live_field(t)?,
            });
        } else if let Some(freed) = t.strip_prefix("- ") {
            // `t7 128 B (addmm)   live 360`
            let words: Vec<&str> = freed.split_whitespace().collect();
            let [name, bytes, ..] = words[..] else {
                return Err(anyhow!("cannot read {t:?}"));
            };
            let from = words.get(3).filter(|w| w.starts_with('('));
            let name = from.map_or(name.to_string(), |f| format!("{name} {f}"));
            let entry = (name, bytes.parse()?);
            let live = live_field(t)?;
            match step.rows.last_mut() {
                Some(row) => row.freed.push(entry),
                None => {
                    step.zero_grad.push(entry);
                    step.live_after_zero_grad = live;
                }
            }
        } else if !t.starts_with("--") && !t.is_empty() {
            op = t.to_string();
        }
    }
    Err(anyhow!("step {n} has no end"))
}

/// The number after `live` at the end of a trace line.
fn live_field(line: &str) -> Result<u64> {
    let tail = line
        .rsplit("live ")
        .next()
        .ok_or_else(|| anyhow!("no live bytes in {line:?}"))?;
    tail.trim_end_matches(')')
        .trim()
        .parse()
        .with_context(|| format!("the live bytes of {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "==== a/b4/sgd\n\
        -- step 2 zero_grad   (live 300)\n      - t17 64 B (mm=2.weight.grad)   live 236\n\
        -- step 2 forward   (live 236)\n  addmm\n      + t22 f32[4x8] 128 B from addmm   live 364\n\
        \x20 relu\n      + t23 f32[4x8] 128 B from relu   live 492\n      - t22 128 B (addmm)   live 364\n\
        -- step 2 end   (live 364)\n==== a/b4/sgd-m0.9\n";

    #[test]
    fn a_step_is_read_op_by_op() {
        let s = parse_step(SAMPLE, "a/b4/sgd", 2).unwrap();
        assert_eq!(s.zero_grad, [("t17 (mm=2.weight.grad)".to_string(), 64)]);
        assert_eq!(s.live_after_zero_grad, 236);
        assert_eq!(s.rows.len(), 2);
        assert_eq!((s.rows[1].op.as_str(), s.rows[1].live), ("relu", 492));
        assert_eq!(s.rows[1].freed, [("t22 (addmm)".to_string(), 128)]);
        assert_eq!(s.rows[0].made, "t22 f32[4x8]");
        assert_eq!(s.peak(), Some(1));
        assert!(parse_step(SAMPLE, "a/b4", 2).is_err());
        assert!(parse_step(SAMPLE, "a/b4/sgd", 1).is_err());
    }
}
