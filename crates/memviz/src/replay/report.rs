//! What `memviz replay` prints: text for people, one JSON document for programs.

use super::largest::Largest;
use super::source::{Kind, Op};
use super::{Replayed, Setup};
use gpumem::size::format_bytes;
use serde_json::{Value, json};
use std::fmt::Write;

fn bytes(b: u64) -> String {
    format!("{} ({b} B)", format_bytes(b))
}

fn source_line(r: &Replayed) -> String {
    let p = &r.plan;
    let what = match p.kind {
        Kind::Recorded => format!(
            "a recorded step (pytorch/record.py), recorded at batch {}",
            p.batch.unwrap_or(0)
        ),
        Kind::Gpu => "a run's trace (a GPU's or a demo's: its workspaces are in it)".to_string(),
    };
    format!(
        "replay:  {} — {what}; device {}, {} trace entries, {} tensors alive before the trace",
        r.file.display(),
        p.device,
        p.entries,
        p.alive_at_start
    )
}

fn card_line(s: &Setup) -> String {
    let c = &s.card.config;
    let mut line = format!(
        "card:    {}; {} outside the allocator",
        s.card_words,
        format_bytes(c.context_memory)
    );
    if let Some(f) = c.memory_fraction {
        let _ = write!(line, "; memory fraction {f}");
    }
    let conf = if s.alloc_conf.is_empty() {
        "defaults".to_string()
    } else {
        format!("PYTORCH_CUDA_ALLOC_CONF={}", s.alloc_conf)
    };
    let _ = write!(line, "\nsettings: {conf}");
    let torch = match s.torch {
        Some(r) => format!("PyTorch {} ({})", r.asked, s.torch_from),
        None => "none (tensors only; the error in today's words)".to_string(),
    };
    let _ = write!(line, "\ntorch:   {torch}");
    line
}

fn workspace_line(r: &Replayed) -> Option<String> {
    if r.plan.kind != Kind::Recorded {
        return None;
    }
    let a = &r.added;
    Some(if a.kept + a.per_call == 0 {
        "workspaces: none added (this PyTorch keeps cuBLAS's outside the allocator, or none was \
         asked)"
            .to_string()
    } else {
        let per_call = if a.per_call > 0 {
            format!(
                ", and {} per-call cuBLASLt workspaces, each freed after its product",
                a.per_call
            )
        } else {
            String::new()
        };
        let which: Vec<String> = a
            .labels
            .iter()
            .map(|(l, b)| format!("{l} {}", format_bytes(*b)))
            .collect();
        format!(
            "workspaces: {} added ({}), each taken by its thread's first matrix product and \
             kept{per_call}",
            a.kept,
            which.join(", "),
        )
    })
}

fn failure_text(r: &Replayed, frames: usize, out: &mut String) {
    let Some(f) = &r.outcome.failure else { return };
    let at = f
        .entry
        .map_or("before the trace's first entry".to_string(), |e| {
            format!("at trace entry {e}")
        });
    let _ = writeln!(
        out,
        "result:  OUT OF MEMORY {at}, allocating `{}` ({})",
        r.plan.label(f.slot),
        bytes(f.oom.requested)
    );
    let _ = writeln!(
        out,
        "  {}: {}",
        r.setup.card.exception,
        f.oom.pytorch_sentence()
    );
    for fr in r.plan.frames[f.slot].iter().take(frames) {
        let _ = writeln!(out, "    {}:{} {}", fr.filename, fr.line, fr.name);
    }
}

/// The text report.
pub fn text(r: &Replayed, frames: usize) -> String {
    let o = &r.outcome;
    let mut out = String::new();
    let _ = writeln!(out, "{}", source_line(r));
    let _ = writeln!(out, "{}", card_line(&r.setup));
    if let Some(w) = workspace_line(r) {
        let _ = writeln!(out, "{w}");
    }
    if r.plan.kind == Kind::Recorded {
        let from = if Some(o.batch) == r.plan.batch {
            "as recorded"
        } else {
            "from the affine form"
        };
        let _ = writeln!(out, "batch:   {} ({from})", o.batch);
    }
    if o.fits() {
        match o.source_oom_fits {
            Some(e) => {
                let _ = writeln!(
                    out,
                    "result:  the run ran out of memory at trace entry {e}; on this card that \
                     request fits, but what the program did after its error is not in the \
                     trace: the replay stops there (fits up to it)"
                );
            }
            None => {
                let _ = writeln!(out, "result:  fits");
            }
        }
    } else {
        failure_text(r, frames, &mut out);
    }
    let _ = writeln!(
        out,
        "peak allocated: {}  (max_memory_allocated)",
        bytes(o.peak_allocated)
    );
    let _ = writeln!(
        out,
        "peak reserved:  {}  (max_memory_reserved)",
        bytes(o.peak_reserved)
    );
    let p = o.at_peak;
    let _ = writeln!(
        out,
        "at the peak of allocated ({}): reserved {}, reserved but unallocated {}, largest free \
         block {}",
        p.entry
            .map_or("before the trace".into(), |e| format!("trace entry {e}")),
        format_bytes(p.reserved),
        format_bytes(p.reserved - p.allocated),
        format_bytes(p.largest_free_block)
    );
    if let Some((l, runs)) = r.largest {
        let _ = writeln!(out, "{}", largest_line(l, runs, &r.setup.card_words));
    }
    for n in notes(r) {
        let _ = writeln!(out, "note: {n}");
    }
    if let Some(path) = &r.snapshot_path {
        let _ = writeln!(
            out,
            "wrote {} (the replayed run's snapshot)",
            path.display()
        );
    }
    out
}

fn largest_line(l: Largest, runs: usize, card: &str) -> String {
    match l {
        Largest::Batch(b) => format!(
            "largest batch: {b} fits {card} ({} does not; {runs} replays)",
            b + 1
        ),
        Largest::None => {
            format!("largest batch: none; not even a batch of 1 fits ({runs} replays)")
        }
        Largest::Unbounded => format!(
            "largest batch: unbounded: nothing grows with the batch, or a batch of {} still fits \
             ({runs} replays)",
            super::MAX_BATCH
        ),
    }
}

/// What the reader should know: the trace's own oddities, then the recorder's notes.
fn notes(r: &Replayed) -> Vec<String> {
    let p = &r.plan;
    let mut n = r.setup.notes.clone();
    if p.on_host.0 > 0 {
        n.push(format!(
            "{} allocations ({}) that CUDA keeps on the host were left out (the recorder's \
             cuda_host: e.g. Adam's step counters)",
            p.on_host.0,
            format_bytes(p.on_host.1)
        ));
    }
    if p.empty_caches > 0 {
        n.push(format!(
            "{} empty_cache() calls in the trace, replayed",
            p.empty_caches
        ));
    }
    if p.own_releases > 0 {
        n.push(format!(
            "{} times the run's allocator gave segments back to serve a request (its retry or \
             garbage collection): the replay's allocator does that by its own rules on this card",
            p.own_releases
        ));
    }
    if p.pending > 0 {
        n.push(format!(
            "{} frees requested but not completed by the trace's end: those blocks stay allocated",
            p.pending
        ));
    }
    if p.alive_at_start > 0 {
        n.push(
            "tensors alive before the trace are allocated first, in address order (their own \
             order is not in the trace)"
                .into(),
        );
    }
    n.extend(r.recorder_notes.iter().cloned());
    n
}

/// The JSON report.
pub fn json(r: &Replayed) -> Value {
    let o = &r.outcome;
    let s = &r.setup;
    let c = &s.card.config;
    let failure = o.failure.as_ref().map(|f| {
        json!({
            "entry": f.entry,
            "tensor": r.plan.label(f.slot),
            "requested": f.oom.requested,
            "tried": f.oom.tried,
            "exception": s.card.exception,
            "message": f.oom.pytorch_sentence(),
            "allocated": f.oom.allocated,
            "reserved": f.oom.reserved,
            "free": f.oom.free,
            "frames": r.plan.frames[f.slot].iter().map(|fr| json!({
                "filename": fr.filename, "line": fr.line, "name": fr.name
            })).collect::<Vec<_>>(),
        })
    });
    let largest = r.largest.map(|(l, runs)| {
        let (batch, kind) = match l {
            Largest::Batch(b) => (Some(b), "batch"),
            Largest::None => (None, "none"),
            Largest::Unbounded => (None, "unbounded"),
        };
        json!({"batch": batch, "answer": kind, "replays": runs})
    });
    let allocations = r
        .plan
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Alloc { .. }))
        .count();
    json!({
        "file": r.file.display().to_string(),
        "kind": match r.plan.kind { Kind::Recorded => "recorded", Kind::Gpu => "gpu" },
        "device": r.plan.device,
        "trace_entries": r.plan.entries,
        "allocations": allocations,
        "alive_at_start": r.plan.alive_at_start,
        "card": {
            "capacity": s.capacity,
            "words": s.card_words,
            "context_memory": c.context_memory,
            "memory_fraction": c.memory_fraction,
            "alloc_conf": s.alloc_conf,
            "max_split_size": c.max_split_size,
            "garbage_collection_threshold": c.gc_threshold,
            "expandable_segments": c.expandable_segments,
            "torch": s.torch.map(|t| t.asked.to_string()),
            "torch_rules": s.torch.map(|t| t.release.version.to_string()),
            "torch_from": s.torch_from,
        },
        "workspaces": {
            "kept": r.added.kept, "kept_bytes": r.added.kept_bytes, "per_call": r.added.per_call,
            "labels": r.added.labels.iter().map(|(l, b)| json!({"label": l, "bytes": b})).collect::<Vec<_>>(),
        },
        "batch": if r.plan.kind == Kind::Recorded { Some(o.batch) } else { None },
        "recorded_batch": r.plan.batch,
        "affine": r.plan.not_affine.is_none(),
        "fits": o.fits(),
        "source_oom_fits_at": o.source_oom_fits,
        "peak_allocated": o.peak_allocated,
        "peak_reserved": o.peak_reserved,
        "at_peak": {
            "entry": o.at_peak.entry,
            "allocated": o.at_peak.allocated,
            "reserved": o.at_peak.reserved,
            "reserved_unallocated": o.at_peak.reserved - o.at_peak.allocated,
            "largest_free_block": o.at_peak.largest_free_block,
        },
        "end": {"allocated": o.end_allocated, "reserved": o.end_reserved},
        "failure": failure,
        "largest_batch": largest,
        "notes": notes(r),
    })
}
