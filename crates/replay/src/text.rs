//! A replay's report as text for people: what `memviz replay` prints, and what the page can
//! show.

use crate::largest::{Largest, MAX_BATCH};
use crate::report::{CardReport, ReplayReport};
use crate::source::Kind;
use gpumem::size::format_bytes;
use std::fmt::Write;

fn bytes(b: u64) -> String {
    format!("{} ({b} B)", format_bytes(b))
}

impl ReplayReport {
    /// The report in words, with at most `frames` stack frames of the tensor that did not
    /// fit.
    pub fn text(&self, frames: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.source_line());
        let _ = writeln!(out, "{}", card_line(&self.card));
        if let Some(w) = self.workspace_line() {
            let _ = writeln!(out, "{w}");
        }
        if let Some(batch) = self.batch {
            let from = if Some(batch) == self.recorded_batch {
                "as recorded"
            } else {
                "from the affine form"
            };
            let _ = writeln!(out, "batch:   {batch} ({from})");
        }
        self.result_text(frames, &mut out);
        let _ = writeln!(
            out,
            "peak allocated: {}  (max_memory_allocated)",
            bytes(self.peak_allocated)
        );
        let _ = writeln!(
            out,
            "peak reserved:  {}  (max_memory_reserved)",
            bytes(self.peak_reserved)
        );
        let p = self.at_peak;
        let _ = writeln!(
            out,
            "at the peak of allocated ({}): reserved {}, reserved but unallocated {}, largest \
             free block {}",
            p.entry
                .map_or("before the trace".into(), |e| format!("trace entry {e}")),
            format_bytes(p.reserved),
            format_bytes(p.reserved_unallocated),
            format_bytes(p.largest_free_block)
        );
        if let Some(l) = self.largest_batch {
            let _ = writeln!(
                out,
                "{}",
                largest_line(l.answer, l.replays, &self.card.words)
            );
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }

    fn source_line(&self) -> String {
        let what = match self.kind {
            Kind::Recorded => format!(
                "a recorded step (pytorch/record.py), recorded at batch {}",
                self.recorded_batch.unwrap_or(0)
            ),
            Kind::Gpu => {
                "a run's trace (a GPU's or a demo's: its workspaces are in it)".to_string()
            }
        };
        format!(
            "replay:  {} — {what}; device {}, {} trace entries, {} tensors alive before the trace",
            self.file, self.device, self.trace_entries, self.alive_at_start
        )
    }

    fn workspace_line(&self) -> Option<String> {
        if self.kind != Kind::Recorded {
            return None;
        }
        let a = &self.workspaces;
        Some(if a.kept + a.per_call == 0 {
            "workspaces: none added (this PyTorch keeps cuBLAS's outside the allocator, or none \
             was asked)"
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
                .map(|w| format!("{} {}", w.label, format_bytes(w.bytes)))
                .collect();
            let how = match &a.measured_on {
                Some(card) => format!("; these rules measured on {card}"),
                None => "; these rules read from PyTorch's source, not measured on a card".into(),
            };
            format!(
                "workspaces: {} added ({}), each taken by its thread's first matrix product and \
                 kept{per_call}{how}",
                a.kept,
                which.join(", "),
            )
        })
    }

    fn result_text(&self, frames: usize, out: &mut String) {
        let Some(f) = &self.failure else {
            let _ = match self.source_oom_fits_at {
                Some(e) => writeln!(
                    out,
                    "result:  the run ran out of memory at trace entry {e}; on this card that \
                     request fits, but what the program did after its error is not in the \
                     trace: the replay stops there (fits up to it)"
                ),
                None => writeln!(out, "result:  fits"),
            };
            return;
        };
        let at = f
            .entry
            .map_or("before the trace's first entry".to_string(), |e| {
                format!("at trace entry {e}")
            });
        let _ = writeln!(
            out,
            "result:  OUT OF MEMORY {at}, allocating `{}` ({})",
            f.tensor,
            bytes(f.requested)
        );
        let _ = writeln!(out, "  {}: {}", f.exception, f.message);
        for fr in f.frames.iter().take(frames) {
            let _ = writeln!(out, "    {}:{} {}", fr.filename, fr.line, fr.name);
        }
    }
}

fn card_line(c: &CardReport) -> String {
    let mut line = format!(
        "card:    {}; {} outside the allocator",
        c.words,
        format_bytes(c.context_memory)
    );
    if c.context_memory == 0 {
        let m = gpumem::versions::MEASURED_CONTEXT;
        let _ = write!(
            line,
            " (no CUDA context assumed; an {1} with PyTorch {2} held {0} before any tensor: \
             --context-memory)",
            format_bytes(m.bytes),
            m.card,
            m.torch
        );
    }
    if let Some(f) = c.memory_fraction {
        let _ = write!(line, "; memory fraction {f}");
    }
    let conf = if c.alloc_conf.is_empty() {
        "defaults".to_string()
    } else {
        format!("PYTORCH_CUDA_ALLOC_CONF={}", c.alloc_conf)
    };
    let _ = write!(line, "\nsettings: {conf}");
    let torch = match c.torch {
        Some(v) => format!("PyTorch {v} ({})", c.torch_from),
        None => "none (tensors only; the error in today's words)".to_string(),
    };
    let _ = write!(line, "\ntorch:   {torch}");
    line
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
            "largest batch: unbounded: nothing grows with the batch, or a batch of {MAX_BATCH} \
             still fits ({runs} replays)"
        ),
    }
}
