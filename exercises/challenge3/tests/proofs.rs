//! Proofs that challenge 3's grader grades: the reference solution passes, the shipped stub
//! fails (part 1 "not attempted", part 2 because its loop leaks), and plausible wrong answers
//! fail on the function they get wrong, with a hint that points at the mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use challenge3::answers_of;
use challenge3::grader::grade;
use grading::proofs::*;
use grading::{Outcome, seed};

#[path = "../solution/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_stub.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 60);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

#[test]
fn the_shipped_stub_fails_kindly() {
    let report = grade(&answers_of!(stub), seed());
    assert!(!report.passed());
    for c in &report.checks {
        match c.function {
            "train" => {}
            _ => assert_eq!(c.outcome, Outcome::NotAttempted, "{report}"),
        }
    }
    let text = report.to_string();
    assert!(text.contains("not attempted yet"), "{text}");
    // The leaking loop still trains (its losses are right) but its peak climbs.
    let train: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.function == "train")
        .collect();
    assert!(train.iter().any(|c| c.outcome == Outcome::Fail), "{report}");
    assert!(train.iter().any(|c| c.outcome == Outcome::Pass), "{report}");
    assert!(text.contains("memory still grows"), "{text}");
}

/// Forgetting the 512-byte rounding.
mod no_rounding {
    pub use crate::solution::{memory_after, segment_for, train};
    pub fn rounded_size(requested: u64) -> u64 {
        requested
    }
}

/// Rounding to 512 but sizing segments as if the device gave exactly what was asked.
mod no_small_segment {
    pub use crate::solution::{memory_after, rounded_size, train};
    pub fn segment_for(requested: u64) -> u64 {
        let size = rounded_size(requested);
        if size < 10 << 20 {
            size
        } else {
            size.div_ceil(2 << 20) * (2 << 20)
        }
    }
}

/// A simulation where a small request reserves only its rounded size.
mod small_reserves_itself {
    pub use crate::solution::{rounded_size, segment_for, train};
    use challenge3::grader::Step;
    pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
        // Small requests: reserved grows by the block; large ones as the solution says.
        let mut out: Vec<(u64, u64)> = Vec::new();
        let solved = crate::solution::memory_after(steps);
        let mut extra_small = 0i64;
        for (i, s) in steps.iter().enumerate() {
            if let Step::Alloc(b) = s
                && rounded_size(*b) <= 1 << 20
            {
                extra_small += rounded_size(*b) as i64 - (2 << 20);
            }
            let (a, r) = solved[i];
            out.push((a, (r as i64 + extra_small).max(0) as u64));
        }
        out
    }
}

/// Thinking a free gives memory back to the device.
mod free_returns_memory {
    pub use crate::solution::{rounded_size, segment_for, train};
    use challenge3::grader::Step;
    pub fn memory_after(steps: &[Step]) -> Vec<(u64, u64)> {
        // Reserved follows allocated down on every free.
        let solved = crate::solution::memory_after(steps);
        let mut out = Vec::new();
        let mut freed = 0u64;
        for (i, s) in steps.iter().enumerate() {
            if let Step::Free(j) = s {
                let before = if *j == 0 { 0 } else { solved[*j - 1].0 };
                freed += solved[*j].0 - before.min(solved[*j].0);
            }
            let (a, r) = solved[i];
            out.push((a, r.saturating_sub(freed)));
        }
        out
    }
}

/// A "fix" that empties the cache after every step but still keeps the outputs.
mod empty_cache_fix {
    pub use crate::solution::{memory_after, rounded_size, segment_for};
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::{Batch, Mlp};
    pub fn train(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        let mut kept = Vec::new();
        let mut losses = Vec::new();
        for _ in 0..epochs {
            let (mut sum, mut rows) = (0.0f64, 0u64);
            for batch in batches {
                let (r, outputs) = mlp.train_step_with_outputs(Batch::Data(batch))?;
                sum += f64::from(r.loss.unwrap_or(f32::NAN)) * r.rows as f64;
                rows += r.rows;
                kept.push(outputs);
                mlp.device().empty_cache();
            }
            losses.push((sum / rows as f64) as f32);
        }
        Ok(losses)
    }
}

/// A "fix" that forgets the history each epoch: flat across epochs, growing within one.
mod per_epoch_history {
    pub use crate::solution::{memory_after, rounded_size, segment_for};
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::{Batch, Mlp};
    pub fn train(mlp: &mut Mlp, batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        let mut losses = Vec::new();
        for _ in 0..epochs {
            let mut epoch = Vec::new();
            for batch in batches {
                epoch.push(mlp.train_step_with_outputs(Batch::Data(batch))?.1);
            }
            let mut sum = 0.0f64;
            let mut rows = 0u64;
            for o in &epoch {
                let n = o.logits.rows();
                sum += o.loss.read_f64()?[0] * n as f64;
                rows += n;
            }
            losses.push((sum / rows as f64) as f32);
        }
        Ok(losses)
    }
}

/// A loop that stops leaking by not training.
mod no_training {
    pub use crate::solution::{memory_after, rounded_size, segment_for};
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::Mlp;
    pub fn train(_mlp: &mut Mlp, _batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        Ok(vec![0.0; epochs as usize])
    }
}

#[test]
fn forgetting_the_rounding_fails() {
    fails_on(
        &grade(&answers_of!(no_rounding), seed()),
        "rounded_size",
        "512",
    );
}

#[test]
fn a_small_request_without_its_segment_fails() {
    fails_on(
        &grade(&answers_of!(no_small_segment), seed()),
        "segment_for",
        "2 MiB",
    );
    fails_on(
        &grade(&answers_of!(small_reserves_itself), seed()),
        "memory_after",
        "2 MiB",
    );
}

#[test]
fn thinking_free_returns_memory_fails() {
    fails_on(
        &grade(&answers_of!(free_returns_memory), seed()),
        "memory_after",
        "empty_cache",
    );
}

#[test]
fn a_fix_that_still_leaks_fails() {
    fails_on(
        &grade(&answers_of!(empty_cache_fix), seed()),
        "train",
        "empty_cache() cannot help",
    );
    fails_on(
        &grade(&answers_of!(per_epoch_history), seed()),
        "train",
        "grows with every step",
    );
}

#[test]
fn a_loop_that_does_not_train_fails() {
    fails_on(
        &grade(&answers_of!(no_training), seed()),
        "train",
        "train on every batch",
    );
}
