//! The search for one-edit answers the graders miss: each challenge's reference solution
//! rewritten once with a knob per plausible mistake (`mutants/challengeN.rs`), every edit
//! graded on the learner's seed. An edit that changes the memory counted on some setup the
//! challenge allows must fail; the few that change no answer are listed as equivalent, with
//! why. Rerun the search, printing what passes:
//!
//! ```text
//! cargo test -p grading --features proofs --test mutants -- --nocapture
//! ```
//!
//! How the misses were hunted: each miss's term was made to decide a setup (a card just
//! under the engine's requested peak, one just over its reserved peak; a depth the engine
//! finds on both), the slack as small as the reference's distance to the engine allows,
//! until the miss failed or its error stayed under the allocator's rounding on every setup
//! tried.

use grading::{Report, seed};
use std::fmt::Debug;

/// A challenge's edits, named once: the enum `M` (`None`, the reference, first), `ALL` (every
/// edit but `None`) and `variants()` (each edit's answers, from the file's `answers::<E>()`).
macro_rules! mutations {
    ($($m:ident),* $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum M {
            None,
            $($m),*
        }

        /// Every edit but `None`.
        pub const ALL: [M; [$(stringify!($m)),*].len()] = [$(M::$m),*];

        /// Each edit's answers, the reference first.
        pub fn variants() -> Vec<(M, Answers)> {
            vec![
                (M::None, answers::<{ M::None as u8 }>()),
                $((M::$m, answers::<{ M::$m as u8 }>())),*
            ]
        }
    };
}

mod mutants {
    pub mod challenge1;
    pub mod challenge2;
    pub mod challenge3;
    pub mod challenge4;
    pub mod challenge5;
}

/// Grades every variant; returns the edits that passed, printed with the count.
fn passing<M: Debug + Copy, A>(
    title: &str,
    variants: Vec<(M, A)>,
    grade: impl Fn(&A) -> Report,
) -> Vec<M> {
    let (reference, rest) = variants.split_first().expect("the reference comes first");
    let r = grade(&reference.1);
    assert!(r.passed(), "{title}: the reference fails\n{r}");
    let passed: Vec<M> = rest
        .iter()
        .filter(|(_, a)| grade(a).passed())
        .map(|(m, _)| *m)
        .collect();
    println!(
        "{title}: {} of {} one-edit answers pass: {passed:?}",
        passed.len(),
        rest.len()
    );
    passed
}

/// Every edit but the equivalent ones fails, and every edit listed is graded.
fn assert_all_fail<M: Debug + Copy + PartialEq>(
    passed: &[M],
    all: &[M],
    equivalent: &[M],
    still: &[M],
) {
    let graded = all.len();
    assert!(graded > 0);
    let missed: Vec<_> = passed
        .iter()
        .filter(|m| !equivalent.contains(m) && !still.contains(m))
        .collect();
    assert!(missed.is_empty(), "one-edit answers that pass: {missed:?}");
}

#[test]
fn challenge1_catches_every_one_edit_answer() {
    use mutants::challenge1::{ALL, EQUIVALENT, STILL_MISSED, variants};
    let v = variants();
    assert_eq!(v.len(), ALL.len() + 1);
    let passed = passing("Challenge 1", v, |a| grading::challenge1::grade(a, seed()));
    assert_all_fail(&passed, &ALL, EQUIVALENT, STILL_MISSED);
}

#[test]
fn challenge2_catches_every_one_edit_answer() {
    use mutants::challenge2::{ALL, EQUIVALENT, STILL_MISSED, variants};
    let v = variants();
    assert_eq!(v.len(), ALL.len() + 1);
    let passed = passing("Challenge 2", v, |a| grading::challenge2::grade(a, seed()));
    assert_all_fail(&passed, &ALL, EQUIVALENT, STILL_MISSED);
}

#[test]
fn challenge3_catches_every_one_edit_answer() {
    use mutants::challenge3::{ALL, EQUIVALENT, STILL_MISSED, variants};
    let v = variants();
    assert_eq!(v.len(), ALL.len() + 1);
    let passed = passing("Challenge 3", v, |a| grading::challenge3::grade(a, seed()));
    assert_all_fail(&passed, &ALL, EQUIVALENT, STILL_MISSED);
}

#[test]
fn challenge4_catches_every_one_edit_answer() {
    use mutants::challenge4::{ALL, EQUIVALENT, STILL_MISSED, variants};
    let v = variants();
    assert_eq!(v.len(), ALL.len() + 1);
    let passed = passing("Challenge 4", v, |a| grading::challenge4::grade(a, seed()));
    assert_all_fail(&passed, &ALL, EQUIVALENT, STILL_MISSED);
}

#[test]
fn challenge5_catches_every_one_edit_answer() {
    use mutants::challenge5::{ALL, EQUIVALENT, STILL_MISSED, variants};
    let v = variants();
    assert_eq!(v.len(), ALL.len() + 1);
    let passed = passing("Challenge 5", v, |a| grading::challenge5::grade(a, seed()));
    assert_all_fail(&passed, &ALL, EQUIVALENT, STILL_MISSED);
}

/// The first miss of each named mistake names the term it lacks; the labels' hint is for
/// the labels alone.
#[test]
fn challenge1_hints_name_the_missing_term() {
    use mutants::challenge1::{M, variants};
    let named = [
        (M::ActivationBits, "bits"),
        (M::YPredOff, "`y_pred` is missing"),
        (M::YPredTwice, "`y_pred` is counted twice"),
        (M::FeaturesOff, "features"),
        (M::Labels4, "int64"),
        (M::Labels0, "labels `y` are missing"),
        (M::Labels16, "not 16"),
        (M::BatchBits, "bits"),
        (M::TopKeptOneLess, "one batch × width tensor short"),
        (M::TopKeptOneMore, "one batch × width tensor too many"),
        (M::TopKeptOff, "kept activations are missing"),
        (M::TopOneGradientLess, "one batch × width tensor short"),
        (M::TopOneGradientMore, "one batch × width tensor too many"),
        (M::TopOutputGradientOff, "output layer's gradients G"),
        (M::TopOutputBiasOff, "bias gradient"),
        (
            M::TopGradientsWithActivations,
            "not the other layers' gradients",
        ),
    ];
    for (m, answers) in variants() {
        let report = grading::challenge1::grade(&answers, seed());
        let Some(first) = report.misses().next() else {
            continue;
        };
        if let Some((_, term)) = named.iter().find(|(n, _)| *n == m) {
            assert!(first.hint.contains(term), "{m:?}: {}", first.hint);
        }
        if m != M::Labels4 {
            assert!(
                !first.hint.contains("not a 4-byte"),
                "{m:?}: {}",
                first.hint
            );
        }
    }
}

/// Challenge 2's named mistakes: the first miss's hint names the term.
#[test]
fn challenge2_hints_name_the_missing_term() {
    use mutants::challenge2::{M, variants};
    let named = [
        (M::InputBiasOff, "input layer's biases"),
        (M::HiddenBiasOff, "biases are missing"),
        (M::OutputBiasOff, "output layer's biases"),
        (M::OutputLayerOff, "output layer is missing"),
        (M::InputLayerOff, "input layer is missing"),
        (M::HiddenLayersOneMore, "layers − 1"),
        (M::ModelWithGradients, "without the gradients"),
        (M::ModelAdamOneCopy, "not one"),
        (M::ModelAdamThreeCopies, "two running averages"),
        (M::ModelStateOff, "Adam's state S is missing"),
        (M::ModelBits, "bits"),
        (M::UpdateNoRoots, "square roots R are missing"),
        (M::UpdateRootsTwice, "one set of square roots"),
        (M::UpdateRootsForSgd, "SGD makes no square roots"),
        (M::UpdateGradientsOff, "the gradients are missing"),
    ];
    for (m, answers) in variants() {
        if let Some((_, term)) = named.iter().find(|(n, _)| *n == m) {
            let report = grading::challenge2::grade(&answers, seed());
            let first = report.misses().next().expect("a named mistake fails");
            assert!(first.hint.contains(term), "{m:?}: {}", first.hint);
        }
    }
}

/// Challenge 4's named mistakes: the first miss's hint names the term (the batch, accumulation's
/// gradients, the loss factor, float64, checkpointing's kept activations, autocast's copies).
#[test]
fn challenge4_hints_name_the_missing_term() {
    use mutants::challenge4::{M, variants};
    let named = [
        (M::BatchOff, "the batch"),
        (M::FeaturesOff, "features"),
        (M::InputBiasOff, "bias"),
        (M::HiddenBiasOff, "bias"),
        (M::OutputBiasOff, "bias"),
        (M::NotAccumulating, "every gradient exists"),
        (M::BottomOneLess, "bottom of the backward pass"),
        (M::TopOneLess, "kept activations"),
        (M::LossOneOverK, "1/k"),
        (M::F64ParamFour, "float64"),
        (M::F64ActFour, "float64"),
        (M::CkptTopOneLess, "keeps only each segment's input"),
        (M::CopiesOff, "float16 copies"),
        (M::CastCacheOff, "float16 copy"),
    ];
    for (m, answers) in variants() {
        if let Some((_, term)) = named.iter().find(|(n, _)| *n == m) {
            let report = grading::challenge4::grade(&answers, seed());
            let first = report.misses().next().expect("a named mistake fails");
            assert!(first.hint.contains(term), "{m:?}: {}", first.hint);
        }
    }
}

/// Challenge 3: each edit's first miss is in the function it edits, and its hint names the
/// rule (the boundary or the term).
#[test]
fn challenge3_first_miss_is_the_edited_rule() {
    use mutants::challenge3::{M, variants};
    for (m, answers) in variants() {
        let report = grading::challenge3::grade(&answers, seed());
        let Some(first) = report.misses().next() else {
            continue;
        };
        let name = format!("{m:?}");
        let (function, term) = match name {
            n if n.starts_with("Round") => ("rounded_size", "512"),
            n if n.starts_with("Pool") => ("pool_for", "1 MiB included"),
            n if n.starts_with("Segment") => ("segment_for", "MiB"),
            n if n.starts_with("Split") => ("split", "left"),
            n if n.starts_with("BestFit") => ("best_fit", "block"),
            n if n.starts_with("FreeNoMerge") => ("free_block", "merges"),
            _ => ("memory_after", "first wrong after"),
        };
        assert!(
            first.function.contains(function),
            "{m:?}: {}",
            first.function
        );
        assert!(first.hint.contains(term), "{m:?}: {}", first.hint);
    }
    let named = [
        (M::EmptyCacheAnyFree, "empty_cache"),
        (M::EmptyCacheIgnored, "empty_cache"),
        (M::NeverReuse, "reuses cached memory"),
        (M::NeverSplit, "not split"),
        (M::AllocatedRequested, "rounded to 512"),
        (M::BestFitFirst, "best fit"),
        (M::BestFitNoTieBreak, "lowest address"),
    ];
    for (m, answers) in variants() {
        if let Some((_, term)) = named.iter().find(|(n, _)| *n == m) {
            let report = grading::challenge3::grade(&answers, seed());
            let first = report.misses().next().expect("a named mistake fails");
            assert!(first.hint.contains(term), "{m:?}: {}", first.hint);
        }
    }
}
