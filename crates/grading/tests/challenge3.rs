//! Proofs that challenge 3's grader grades: the reference solution passes, the shipped stub
//! fails every step (the allocator's steps "not attempted", the leak because its loop leaks),
//! and for every step a plausible wrong answer fails on that step alone, with a hint that
//! names the mistake. A learner's test passes on the core alone (step 1 and the leak), and
//! fails on a wrong answer to an extension they attempted.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge3::answers_of;
use grading::challenge3::{grade, steps};
use grading::proofs::*;
use grading::{Outcome, seed};

#[path = "../../../solutions/challenge3/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge3.rs"));

#[test]
fn the_reference_solution_passes() {
    passes(&grade(&answers_of!(solution), seed()), 140);
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

/// The core solved (step 1 and the leak), every extension still the stub.
mod core_only {
    pub use crate::solution::{pool_for, rounded_size, segment_for, train};
    pub use crate::stub::{best_fit, free_block, memory_after, split};
}

#[test]
fn the_core_alone_passes_a_learners_test() {
    let report = grade(&answers_of!(core_only), seed());
    assert!(
        !report.passed(),
        "the extensions are not attempted:\n{report}"
    );
    learner_passes(&report);
    let text = report.to_string();
    assert!(text.contains("the core is done"), "{text}");
    assert!(text.contains("going further"), "{text}");
}

#[test]
fn a_wrong_extension_fails_a_learners_test() {
    learner_fails(&grade(&answers_of!(wrong::first_fit), seed()));
}

#[test]
fn the_shipped_stub_fails_a_learners_test() {
    learner_fails(&grade(&answers_of!(stub), seed()));
}

#[test]
fn the_shipped_stub_fails_every_step() {
    let report = grade(&answers_of!(stub), seed());
    assert!(!report.passed());
    let allocator_steps = [
        steps::ROUNDED_SIZE,
        steps::POOL_FOR,
        steps::SEGMENT_FOR,
        steps::BEST_FIT,
        steps::SPLIT,
        steps::FREE_BLOCK,
        steps::MEMORY_AFTER,
    ];
    for step in allocator_steps {
        assert!(
            report.checks.iter().any(|c| c.function == step),
            "no checks for {step}"
        );
    }
    for c in &report.checks {
        if c.function != steps::TRAIN {
            assert_eq!(c.outcome, Outcome::NotAttempted, "{report}");
        }
    }
    let text = report.to_string();
    assert!(text.contains("not attempted yet"), "{text}");
    // The leaking loop still trains (its losses are right) but its peak climbs.
    let train: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.function == steps::TRAIN)
        .collect();
    assert!(train.iter().any(|c| c.outcome == Outcome::Fail), "{report}");
    assert!(train.iter().any(|c| c.outcome == Outcome::Pass), "{report}");
    assert!(text.contains("memory still grows"), "{text}");
}

#[path = "challenge3/allocator.rs"]
mod wrong;

// The leak.

/// A "fix" that empties the cache after every step but still keeps the outputs.
mod empty_cache_fix {
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, split,
    };
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
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, split,
    };
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
    pub use crate::solution::{
        best_fit, free_block, memory_after, pool_for, rounded_size, segment_for, split,
    };
    use gpumem::Error;
    use gpumem::data::Split;
    use gpumem::mlp::Mlp;
    pub fn train(_mlp: &mut Mlp, _batches: &[Split], epochs: u64) -> Result<Vec<f32>, Error> {
        Ok(vec![0.0; epochs as usize])
    }
}

#[test]
fn step1_slips_fail_with_their_hint() {
    let cases: [(grading::challenge3::Answers, &str, &str); 5] = [
        (answers_of!(wrong::no_rounding), steps::ROUNDED_SIZE, "512"),
        (
            answers_of!(wrong::rounding_to_mib),
            steps::ROUNDED_SIZE,
            "not 1 KiB or 1 MiB",
        ),
        (
            answers_of!(wrong::small_pool_below_1mib),
            steps::POOL_FOR,
            "1 MiB included",
        ),
        (
            answers_of!(wrong::no_small_segment),
            steps::SEGMENT_FOR,
            "2 MiB",
        ),
        (
            answers_of!(wrong::ten_mib_shares_a_segment),
            steps::SEGMENT_FOR,
            "from 10 MiB on",
        ),
    ];
    for (answers, step, hint) in cases {
        fails_on(&grade(&answers, seed()), step, hint);
    }
}

#[test]
fn rounded_size_is_the_request_rounded_not_the_block_handed_out() {
    let report = grade(&answers_of!(wrong::block_handed_out), seed());
    fails_on(&report, steps::ROUNDED_SIZE, "step 3");
    let miss = report.misses().next().expect("it fails");
    assert!(
        miss.case.contains("19.5") || miss.case.contains("20447232"),
        "{report}"
    );
    assert!(
        miss.expected.contains("the block it hands out is 20 MiB"),
        "{report}"
    );
}

#[test]
fn step2_slips_fail_with_their_hint() {
    let cases: [(grading::challenge3::Answers, &str); 4] = [
        (
            answers_of!(wrong::first_fit),
            "the smallest block that is large enough",
        ),
        (answers_of!(wrong::no_tie_break), "lowest address"),
        (
            answers_of!(wrong::offset_tie_break),
            "the lower segment first",
        ),
        (answers_of!(wrong::any_pool), "own pool"),
    ];
    for (answers, hint) in cases {
        fails_on(&grade(&answers, seed()), steps::BEST_FIT, hint);
    }
}

#[test]
fn step3_slips_fail_with_their_hint() {
    fails_on(
        &grade(&answers_of!(wrong::split_at_one_mib_or_more), seed()),
        steps::SPLIT,
        "more than 1 MiB, not 1 MiB or more",
    );
    fails_on(
        &grade(&answers_of!(wrong::pool_of_the_block), seed()),
        steps::SPLIT,
        "the request's pool decides",
    );
}

#[test]
fn step4_merging_one_side_only_fails() {
    fails_on(
        &grade(&answers_of!(wrong::merge_right_only), seed()),
        steps::FREE_BLOCK,
        "before it too",
    );
}

#[test]
fn step5_slips_fail_with_their_hint() {
    fails_on(
        &grade(&answers_of!(wrong::small_reserves_itself), seed()),
        steps::MEMORY_AFTER,
        "2 MiB",
    );
    fails_on(
        &grade(&answers_of!(wrong::free_returns_memory), seed()),
        steps::MEMORY_AFTER,
        "empty_cache",
    );
}

#[test]
fn a_fix_that_still_leaks_fails() {
    fails_on(
        &grade(&answers_of!(empty_cache_fix), seed()),
        steps::TRAIN,
        "empty_cache() cannot help",
    );
    fails_on(
        &grade(&answers_of!(per_epoch_history), seed()),
        steps::TRAIN,
        "grows with every step",
    );
}

#[test]
fn a_loop_that_does_not_train_fails() {
    fails_on(
        &grade(&answers_of!(no_training), seed()),
        steps::TRAIN,
        "train on every batch",
    );
}
