//! The report as text, for a person at a terminal (`--json` is for programs).

use super::{Cli, Views};
use gpumem::size::format_bytes;
use gpumem::snapshot::Summary;

/// Width of a segment's bar in the segment view.
const BAR: usize = 40;

pub(crate) fn report(
    cli: &Cli,
    summaries: &[Summary],
    problems: &[String],
    v: Option<&Views>,
) -> String {
    let mut out = format!("memviz — {}\n", cli.file.display());
    if summaries.is_empty() {
        out.push_str("the snapshot has no segments and no trace\n");
    }
    for s in summaries {
        out.push_str(&summary(s));
    }
    for p in problems {
        out.push_str(&format!("warning: {p}\n"));
    }
    if let Some(v) = v {
        out.push_str(&peak(v, cli.frames));
        out.push_str(&segments(v, cli.largest));
        if let Some(d) = &v.drawn {
            let left_out = if d.summarised > 0 {
                format!(
                    "; {} of {} drawn, {} summarised (--max-shapes)",
                    d.bands, d.layout_alive, d.summarised
                )
            } else {
                String::new()
            };
            out.push_str(&format!(
                "\nper-tensor timeline of device {}: {} ({} tensors, trace entries {} to {}{left_out})\n",
                v.device,
                d.path.display(),
                d.bands,
                v.window.0,
                v.window.1
            ));
        }
    }
    out
}

/// One device's summary.
fn summary(s: &Summary) -> String {
    let mut out = format!(
        "\ndevice {}: {} segment(s), {} trace entries\n",
        s.device, s.segments, s.events
    );
    out.push_str(&format!(
        "at the dump:    reserved {}, allocated {}, active {}, requested {}\n",
        format_bytes(s.reserved),
        format_bytes(s.allocated),
        format_bytes(s.active),
        format_bytes(s.requested)
    ));
    if s.events > 0 {
        out.push_str(&format!(
            "over the trace: peak reserved {}, peak requested in live tensors {}\n",
            format_bytes(s.peak_reserved),
            format_bytes(s.peak_requested)
        ));
    }
    for (size, free) in &s.ooms {
        out.push_str(&format!(
            "out of memory:  a request of {} failed with {} free on the device\n",
            format_bytes(*size),
            format_bytes(*free)
        ));
    }
    if !s.largest.is_empty() {
        out.push_str("largest blocks at the dump:\n");
        for (name, bytes, addr) in &s.largest {
            out.push_str(&format!(
                "  {:>12}  {addr:#x}  {name}\n",
                format_bytes(*bytes)
            ));
        }
    }
    out
}

/// The state at the peak: its largest tensors, each with its innermost `frames` frames.
fn peak(v: &Views, frames: usize) -> String {
    let p = &v.peak;
    if p.tensors == 0 {
        return String::new();
    }
    let mut out = format!(
        "\nat the peak (after entry {} of device {}, trace entries {} to {}): {} in {} live \
         tensors; the largest:\n",
        p.after_entries,
        v.device,
        v.window.0,
        v.window.1,
        format_bytes(p.requested),
        p.tensors
    );
    for t in &p.largest {
        let when = t.allocated_at.map_or("from the start".to_string(), |e| {
            format!("allocated at entry {e}")
        });
        out.push_str(&format!(
            "  {:>12}  {:#x}  {}  ({when})\n",
            format_bytes(t.bytes),
            t.addr,
            t.name
        ));
        for f in t.frames.iter().take(frames) {
            out.push_str(&format!(
                "                  {}:{} {}\n",
                f.filename, f.line, f.name
            ));
        }
        if t.frames.len() > frames {
            out.push_str(&format!(
                "                  … {} more frame(s) (--frames, --json)\n",
                t.frames.len() - frames
            ));
        }
    }
    out
}

/// The segment view: the largest segments, each a bar of its blocks in use.
fn segments(v: &Views, largest: usize) -> String {
    if v.segments.is_empty() {
        return String::new();
    }
    let when = v
        .segments_at
        .map_or("at the dump".to_string(), |e| format!("after entry {e}"));
    let mut out = format!(
        "\nsegments {when} (largest {} of {}; # in use, . free):\n",
        largest.min(v.segments.len()),
        v.segments.len()
    );
    for s in v.segments.iter().take(largest) {
        out.push_str(&format!(
            "  {:#x} {:>11} [{}] {} in use in {} block(s), largest free {}\n",
            s.address,
            format_bytes(s.total_size),
            super::views::bar(s, BAR),
            format_bytes(s.in_use),
            s.blocks.len(),
            format_bytes(s.largest_free)
        ));
    }
    out
}
