//! For instructors (`instructors.md`): demo transcripts and timed commands.

use anyhow::Result;
use std::fmt::Write as _;

use super::transcript;

/// `cargo run -p challenge1 -- --backend plan`, as it prints.
pub fn demo_challenge1() -> Result<String> {
    transcript(|| demos::challenge1::run(["challenge1", "--backend", "plan"]))
}

/// `cargo run -p challenge2 -- --backend plan`, as it prints.
pub fn demo_challenge2() -> Result<String> {
    transcript(|| demos::challenge2::run(["challenge2", "--backend", "plan"]))
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

/// Challenge 1's reference solution, graded as the proofs grade it.
#[path = "../../../../solutions/challenge1/answer.rs"]
mod solution;

/// The reference solution with one classic mistake: bits instead of bytes.
mod bits {
    pub use super::solution::{batch_bytes, fits, top_of_backward};
    pub fn activation_bytes(batch: u64, width: u64) -> u64 {
        batch * width * 32
    }
}

/// What Challenge 1's grader prints for an answer that counts bits instead of bytes (the
/// seed the learners' grader uses by default): its summary line and the first missed check.
pub fn grader_bits() -> Result<String> {
    let report =
        grading::challenge1::grade(&grading::challenge1::answers_of!(bits), grading::seed());
    let text = report.to_string();
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let mut out = String::new();
    // The summary, the function's line, and its first miss (four lines).
    for line in lines.by_ref().take(6) {
        writeln!(out, "{line}")?;
    }
    Ok(out)
}
