//! Proofs that Challenge 4's grader grades: the reference solution passes, the shipped stub
//! is "not attempted", and plausible wrong answers fail on the check they get wrong, with a
//! hint that points at the mistake.
//!
//! Built only with the `proofs` feature (the repository's test command turns it on). The stub
//! graded here is `src/answer.rs` as git's HEAD has it (see `build.rs`), so solving the
//! exercise in place does not break these proofs.

use grading::challenge4::answers_of;
use grading::challenge4::{
    Checkpointing, FITS, LOSS_SCALE, NOTHING_NEEDLESS, Precision, SAME_BATCH, Settings, grade,
};
use grading::proofs::*;
use grading::{Setup, seed};

#[path = "../../../solutions/challenge4/answer.rs"]
mod solution;
include!(concat!(env!("OUT_DIR"), "/shipped_challenge4.rs"));
#[path = "challenge4/loss_scale.rs"]
mod loss_scale_mistakes;
use loss_scale_mistakes::{every_micro_batch_as_long, one_over_k};

#[test]
fn the_reference_solution_passes() {
    let report = grade(&answers_of!(solution), seed());
    passes(&report, 40);
    // Every rule is exercised on fixed and random cases.
    for group in ["peak_bytes", FITS, SAME_BATCH, NOTHING_NEEDLESS, LOSS_SCALE] {
        let n = report.checks.iter().filter(|c| c.function == group).count();
        assert!(n >= 10, "{group}: {n} checks");
    }
}

#[test]
fn the_reference_solution_passes_other_seeds() {
    passes_on_other_seeds(|s| grade(&answers_of!(solution), s));
}

#[test]
fn the_reference_solution_needs_every_strategy_somewhere() {
    // The cases ask for each strategy (and for none): a grader whose cases one strategy
    // could always solve would not teach the others.
    let report = grade(&answers_of!(solution), seed());
    let chosen: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.function == FITS)
        .map(|c| c.case.as_str())
        .collect();
    for what in [
        "float32, 1 micro-batch of 32 rows, no checkpointing",
        "mixed precision, 1 micro-batch",
        "checkpoints every",
        "micro-batches of",
    ] {
        assert!(
            chosen.iter().any(|c| c.contains(what)),
            "no case needs `{what}`:\n{chosen:#?}"
        );
    }
}

#[test]
fn the_shipped_stub_is_not_attempted() {
    not_attempted(&grade(&answers_of!(stub), seed()));
}

/// Halving the batch until it fits, instead of accumulating: another training run.
mod smaller_batch {
    use super::*;
    pub use crate::solution::{loss_scale, peak_bytes};
    pub fn choose_settings(setup: Setup, card: u64) -> Settings {
        let mut rows = setup.batch;
        let mut s = Settings::plain(rows);
        while peak_bytes(setup, s) > card / 100 * 95 && rows > 1 {
            rows /= 2;
            s = Settings::plain(rows);
        }
        s
    }
}

/// Every strategy at once: it fits, but most of it is not needed.
mod everything_on {
    use super::*;
    pub use crate::solution::{loss_scale, peak_bytes};
    pub fn choose_settings(setup: Setup, card: u64) -> Settings {
        (1..=setup.batch)
            .map(|steps| Settings {
                precision: Precision::Mixed,
                micro_batch: setup.batch.div_ceil(steps),
                accumulation_steps: steps,
                checkpointing: Checkpointing::Sqrt,
            })
            .find(|&s| peak_bytes(setup, s) <= card / 100 * 95)
            .unwrap_or(Settings::plain(setup.batch))
    }
}

/// Believing that 16-bit floats halve the whole step, model included.
mod mixed_halves_everything {
    use super::*;
    pub use crate::solution::{choose_settings, loss_scale};
    pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
        let float32 = crate::solution::peak_bytes(
            setup,
            Settings {
                precision: Precision::Float32,
                ..settings
            },
        );
        match settings.precision {
            Precision::Mixed => float32 / 2,
            _ => crate::solution::peak_bytes(setup, settings),
        }
    }
}

/// Mixed precision as float32 with the activations alone halved: autocast's float16 copies
/// of the weights forgotten (checkpointed settings are left right, so that only this
/// mistake shows).
mod no_float16_copies {
    use super::*;
    pub use crate::solution::{choose_settings, loss_scale};
    pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
        let right = crate::solution::peak_bytes(setup, settings);
        if settings.precision != Precision::Mixed || settings.checkpointing != Checkpointing::Off {
            return right;
        }
        let float32 = crate::solution::peak_bytes(
            setup,
            Settings {
                precision: Precision::Float32,
                ..settings
            },
        );
        // The float32 step's busiest activations (the kept ones and two gradients) at half
        // the bytes.
        float32 - (setup.layers + 2) * settings.micro_batch * setup.width * 2
    }
}

/// Choosing with that belief: mixed precision looks enough where the model is large.
mod mixed_halves_everything_when_choosing {
    use super::*;
    pub use crate::solution::{loss_scale, peak_bytes};
    pub fn choose_settings(setup: Setup, card: u64) -> Settings {
        let halved = |s: Settings| match s.precision {
            Precision::Mixed => {
                peak_bytes(
                    setup,
                    Settings {
                        precision: Precision::Float32,
                        ..s
                    },
                ) / 2
            }
            _ => peak_bytes(setup, s),
        };
        for steps in 1..=setup.batch {
            for (precision, checkpointing) in [
                (Precision::Float32, Checkpointing::Off),
                (Precision::Mixed, Checkpointing::Off),
                (Precision::Float32, Checkpointing::Sqrt),
                (Precision::Mixed, Checkpointing::Sqrt),
            ] {
                let s = Settings {
                    precision,
                    micro_batch: setup.batch.div_ceil(steps),
                    accumulation_steps: steps,
                    checkpointing,
                };
                if halved(s) <= card / 100 * 95 {
                    return s;
                }
            }
        }
        Settings::plain(setup.batch)
    }
}

/// Rounding the micro-batch down: the last rows of an uneven batch are never seen.
mod floor_micro_batch {
    use super::*;
    pub use crate::solution::{loss_scale, peak_bytes};
    pub fn choose_settings(setup: Setup, card: u64) -> Settings {
        let s = crate::solution::choose_settings(setup, card);
        Settings {
            micro_batch: setup.batch / s.accumulation_steps,
            ..s
        }
    }
}

/// Twice the micro-batches needed, "to be safe".
mod too_many_micro_batches {
    use super::*;
    pub use crate::solution::{loss_scale, peak_bytes};
    pub fn choose_settings(setup: Setup, card: u64) -> Settings {
        let s = crate::solution::choose_settings(setup, card);
        if s.accumulation_steps == 1 {
            return s;
        }
        let steps = (2 * s.accumulation_steps).min(setup.batch);
        Settings {
            micro_batch: setup.batch.div_ceil(steps),
            accumulation_steps: steps,
            ..s
        }
    }
}

/// Checkpointing counted as keeping only one activation per segment, forgetting that the
/// backward pass recomputes a segment whole.
mod checkpoints_only {
    use super::*;
    pub use crate::solution::{choose_settings, loss_scale};
    pub fn peak_bytes(setup: Setup, settings: Settings) -> u64 {
        let full = crate::solution::peak_bytes(setup, settings);
        let g = match settings.checkpointing {
            Checkpointing::Off => return full,
            Checkpointing::Every(k) | Checkpointing::Each(k) => k.clamp(1, setup.layers),
            Checkpointing::Sqrt => (setup.layers as f64).sqrt().ceil() as u64,
        };
        let act = match settings.precision {
            Precision::Mixed => 2,
            Precision::Float32 => 4,
            Precision::Float64 => 8,
        };
        full - g * settings.micro_batch * setup.width * act
    }
}

#[test]
fn a_smaller_batch_fails_the_batch_rule() {
    fails_on(
        &grade(&answers_of!(smaller_batch), seed()),
        SAME_BATCH,
        "different training run",
    );
}

#[test]
fn everything_on_fails_the_needless_rule() {
    fails_on(
        &grade(&answers_of!(everything_on), seed()),
        NOTHING_NEEDLESS,
        "not needed only costs",
    );
}

#[test]
fn mixed_precision_halving_everything_fails_the_equation() {
    fails_on(
        &grade(&answers_of!(mixed_halves_everything), seed()),
        "peak_bytes",
        "stay float32",
    );
}

#[test]
fn forgetting_autocasts_weight_copies_fails_the_equation() {
    fails_on(
        &grade(&answers_of!(no_float16_copies), seed()),
        "peak_bytes",
        "float16 copies of the weights",
    );
}

#[test]
fn choosing_as_if_mixed_precision_halved_everything_does_not_fit() {
    let report = grade(&answers_of!(mixed_halves_everything_when_choosing), seed());
    fails_on(&report, FITS, "optimizer's state stay float32");
    assert!(report.to_string().contains("out of memory"), "{report}");
}

#[test]
fn a_rounded_down_micro_batch_fails_the_batch_rule() {
    fails_on(
        &grade(&answers_of!(floor_micro_batch), seed()),
        SAME_BATCH,
        "⌈batch / accumulation_steps⌉",
    );
}

#[test]
fn too_many_micro_batches_fail_the_needless_rule() {
    let report = grade(&answers_of!(too_many_micro_batches), seed());
    fails_on(&report, NOTHING_NEEDLESS, "fewest micro-batches");
    assert!(report.to_string().contains("micro-batch ("), "{report}");
}

#[test]
fn forgetting_the_recomputed_segment_fails_the_equation() {
    fails_on(
        &grade(&answers_of!(checkpoints_only), seed()),
        "peak_bytes",
        "recomputed whole",
    );
}

#[test]
fn a_report_names_expected_got_and_hint() {
    let report = grade(&answers_of!(everything_on), seed());
    let text = report.to_string();
    for part in [
        "expected:",
        "got:",
        "hint:",
        NOTHING_NEEDLESS,
        "is not needed",
    ] {
        assert!(text.contains(part), "{part}:\n{text}");
    }
}

/// The same proofs over 40 seeds of random cases (slow in a debug build: about a minute).
/// Run with `cargo test -p grading --test proofs_challenge4 -- --ignored`.
#[test]
#[ignore]
fn every_proof_holds_for_many_seeds() {
    for seed in 0..40 {
        let report = grade(&answers_of!(solution), seed);
        assert!(report.passed(), "seed {seed}:\n{report}");
        for (answers, group) in [
            (answers_of!(everything_on), NOTHING_NEEDLESS),
            (answers_of!(too_many_micro_batches), NOTHING_NEEDLESS),
            (answers_of!(mixed_halves_everything_when_choosing), FITS),
            (answers_of!(floor_micro_batch), SAME_BATCH),
            (answers_of!(smaller_batch), SAME_BATCH),
            (answers_of!(mixed_halves_everything), "peak_bytes"),
            (answers_of!(no_float16_copies), "peak_bytes"),
            (answers_of!(checkpoints_only), "peak_bytes"),
            (answers_of!(one_over_k), LOSS_SCALE),
            (answers_of!(every_micro_batch_as_long), LOSS_SCALE),
        ] {
            let r = grade(&answers, seed);
            assert!(!r.passed(), "seed {seed}: a wrong answer passed");
            assert!(r.misses().all(|c| c.function == group), "seed {seed}:\n{r}");
        }
    }
}
