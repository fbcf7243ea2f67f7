//! Reading an out-of-memory message (`monitoring.md`): the lesson's message, the engine's for
//! the same attempt in both of PyTorch's wordings, every field mapped to the engine's figures,
//! and the memory outside the allocator derived from the lesson's own numbers.

use anyhow::{Context, Result, anyhow, ensure};
use gpumem::alloc::{OomMessage, OutOfMemory};
use gpumem::lesson::{LESSON_OOM, LessonFigures};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

use super::{full_batch_error, text_block};

/// The lesson's figures, read from its message (`gpumem::lesson`, one home for both).
fn lesson_figures() -> Result<LessonFigures> {
    gpumem::lesson::lesson_figures().map_err(|e| anyhow!(e))
}

/// Hundredths of a GiB as the lesson prints them: `0.72 GiB`.
fn gib(h: u64) -> String {
    gpumem::lesson::hundredths_text(h)
}

/// Bytes to the nearest hundredth of a GiB, to compare with the lesson's figures.
fn in_hundredths(bytes: u64) -> u64 {
    (bytes as f64 / (1u64 << 30) as f64 * 100.0).round() as u64
}

/// The derived memory outside the allocator as the flag's value, e.g. `0.72GiB`.
fn context_flag() -> Result<String> {
    let h = lesson_figures()?.outside()?;
    Ok(gpumem::lesson::hundredths_arg(h))
}

/// Challenge 1's command line for the lesson's attempt with the derived context memory.
fn context_args(form: OomMessage) -> Result<Vec<String>> {
    Ok([
        "--backend",
        "plan",
        "--context-memory",
        &context_flag()?,
        "--oom-message",
        &form.to_string(),
    ]
    .map(String::from)
    .to_vec())
}

/// Challenge 1 run from its library with `--json` and the derived context: its error, and the
/// message it printed.
pub fn context_run(form: OomMessage) -> Result<(OutOfMemory, String)> {
    let args: Vec<String> = std::iter::once("challenge1".to_string())
        .chain(context_args(form)?)
        .chain(["--json".to_string()])
        .collect();
    let (result, text) = cli::capture(|| demos::challenge1::run(args));
    result?;
    let json: serde_json::Value = serde_json::from_str(&text).context("challenge 1's JSON")?;
    let attempt = &json["attempt"];
    let oom: OutOfMemory = serde_json::from_value(attempt["measured"]["oom"].clone())
        .context("challenge 1's full batch fits with the lesson's context memory")?;
    let message = attempt["out_of_memory_message"]
        .as_str()
        .ok_or_else(|| anyhow!("challenge 1 printed no out-of-memory message"))?
        .to_string();
    ensure!(
        message == oom.to_string(),
        "challenge 1's message is not its error's"
    );
    Ok((oom, message))
}

/// The lesson's message as a text block.
pub fn lesson_oom() -> Result<String> {
    Ok(text_block(LESSON_OOM))
}

/// Both commands and both messages of the run with the derived context memory.
pub fn context_run_messages() -> Result<String> {
    let mut out = String::new();
    for form in [OomMessage::Lesson, OomMessage::Current] {
        let (_, message) = context_run(form)?;
        let command = format!(
            "cargo run -p challenge1 -- {}",
            context_args(form)?.join(" ")
        );
        write!(out, "```text\n$ {command}\n{message}\n```\n\n")?;
    }
    Ok(out.trim_end().to_string() + "\n")
}

/// The field table: each field in both wordings, the lesson's figure, what it is in the
/// engine, and the run's figure.
pub fn oom_fields() -> Result<String> {
    let l = lesson_figures()?;
    let (o, _) = context_run(OomMessage::Lesson)?;
    let free = o
        .free
        .ok_or_else(|| anyhow!("the emulated card reports no free bytes"))?;
    let capacity = o
        .capacity
        .ok_or_else(|| anyhow!("the emulated card has no capacity"))?;
    let rows = [
        [
            "Tried to allocate X".into(),
            "Tried to allocate X.".into(),
            gib(l.tried),
            "the segment asked of the device: the request rounded to the allocator's sizes".into(),
            format_bytes(o.tried),
        ],
        [
            "GPU 0".into(),
            "GPU 0".into(),
            "the first GPU".into(),
            "the device and its backing".into(),
            format!("`{}`", o.device),
        ],
        [
            "T total capacity".into(),
            "has a total capacity of T".into(),
            gib(l.total),
            "the card (`--device-memory`)".into(),
            format_bytes(capacity),
        ],
        [
            "A already allocated".into(),
            "A is allocated by PyTorch".into(),
            gib(l.allocated),
            "`memory_allocated()`".into(),
            format_bytes(o.allocated),
        ],
        [
            "F free".into(),
            "of which F is free".into(),
            gib(l.free),
            "the driver's free: capacity − memory outside the allocator − `memory_reserved()`"
                .into(),
            format_bytes(free),
        ],
        [
            "R reserved in total".into(),
            "(A + U)".into(),
            gib(l.reserved),
            "`memory_reserved()`".into(),
            format_bytes(o.reserved),
        ],
        [
            "(R − A)".into(),
            "U is reserved by PyTorch but unallocated".into(),
            gib(l.reserved - l.allocated),
            "`memory_reserved()` − `memory_allocated()`".into(),
            format_bytes(o.cached_unused()),
        ],
        [
            "—".into(),
            "this process has P memory in use".into(),
            "—".into(),
            "`memory_reserved()` + memory outside the allocator (`--context-memory`)".into(),
            format_bytes(o.process_in_use()),
        ],
        [
            "M allowed; (with a fraction)".into(),
            "M allowed; (with a fraction)".into(),
            "—".into(),
            "fraction × capacity (`--memory-fraction`; PyTorch's `allowed_memory_maximum`)".into(),
            o.allowed
                .map_or_else(|| "— (none set)".into(), format_bytes),
        ],
    ];
    let mut out = String::from(
        "| PyTorch ≤ 2.0 | today's PyTorch | the lesson | in the engine | this run |\n\
         | :--- | :--- | :--- | :--- | :--- |\n",
    );
    for r in rows {
        let [old, new, lesson, what, ours]: [String; 5] = r;
        writeln!(out, "| {old} | {new} | {lesson} | {what} | {ours} |")?;
    }
    Ok(out)
}

/// The derivation of the memory outside the allocator from the lesson's figures, and how the
/// run's figures compare: free + reserved matches; free alone is off by the reserved gap,
/// whose allocated part is what the message cannot explain.
pub fn outside_allocator() -> Result<String> {
    let l = lesson_figures()?;
    let outside = l.outside()?;
    let (o, _) = context_run(OomMessage::Lesson)?;
    let free = o.free.ok_or_else(|| anyhow!("no free figure"))?;
    let default_free = full_batch_error()?
        .free
        .ok_or_else(|| anyhow!("no free figure"))?;
    let ours_sum = in_hundredths(free + o.reserved);
    let lesson_sum = l.free + l.reserved;
    ensure!(
        ours_sum.abs_diff(lesson_sum) <= 1,
        "free + reserved: {} here, {} in the lesson",
        gib(ours_sum),
        gib(lesson_sum)
    );
    let reserved_gap = l.reserved.saturating_sub(in_hundredths(o.reserved));
    let allocated_gap = l.allocated.saturating_sub(in_hundredths(o.allocated));
    ensure!(
        in_hundredths(free).abs_diff(l.free + reserved_gap) <= 1,
        "free differs from the lesson's by more than the reserved gap"
    );
    ensure!(
        reserved_gap > 0 && allocated_gap > 0,
        "the run now matches the lesson's allocated and reserved: the page's explanation is moot"
    );
    Ok(format!(
        "From the lesson's own figures: {} − {} − {} = **{}** outside the allocator. The run \
         above sets `--context-memory {}` to that value, derived from the lesson's message \
         (without the flag the engine's card holds nothing outside the allocator, and free \
         reads {}). Its figures then add up as the lesson's do: free + reserved is {} here and \
         {} in the lesson. Free alone is {} where the lesson has {}, higher by the gap in \
         reserved ({} here, {} there). That gap is the part we cannot explain: the lesson's \
         \"already allocated\" is {}, ours {} — `z0`, the model and the batch. The message \
         gives only the sum, so what the lesson's script kept on the card beyond those, {}, \
         cannot be named from it. `--card lesson` sets this memory for you, with the defaults \
         of the lesson's PyTorch, 1.12 ([Inside the caching allocator]\
         (allocator.md#which-card-tensors-only-or-the-lessons-card-as-it-was)).\n",
        gib(l.total),
        gib(l.free),
        gib(l.reserved),
        gib(outside),
        context_flag()?,
        format_bytes(default_free),
        format_bytes(free + o.reserved),
        gib(lesson_sum),
        format_bytes(free),
        gib(l.free),
        format_bytes(o.reserved),
        gib(l.reserved),
        gib(l.allocated),
        format_bytes(o.allocated),
        gib(allocated_gap),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outside_memory_prints_as_the_lesson_would() {
        let l = lesson_figures().unwrap();
        assert_eq!(gib(l.outside().unwrap()), "0.72 GiB");
        assert_eq!(context_flag().unwrap(), "0.72GiB");
    }
}
