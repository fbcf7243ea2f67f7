//! Challenge 1: the whole training set as one batch.
//!
//! The learner writes the equation's batch terms — one activation `a`, the batch `D` and the
//! top of the backward pass `L·a + 2·a + G` — and the stub's `fits` adds them to the model's
//! terms ([`crate::given`]). Each piece is compared with the engine's allocations, term by
//! term ([`Parts`]), a miss naming the term it lacks; `fits` with the engine's plan of steps.

mod boundary;

use crate::card;
use crate::diagnose::Diagnosis;
use crate::measure::{needs, step};
use crate::parts::{Parts, piece_setups};
use crate::{NoValue, Opt, Report, Setup, attempt_timed};
use boundary::boundary_cases;
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::CARD_BYTES;
use gpumem::size::format_bytes;
use rand::{RngExt, SeedableRng};

/// The learner's functions (`fits` is given in the stub: it adds up the pieces).
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub activation_bytes: fn(batch: u64, width: u64) -> u64,
    pub batch_bytes: fn(setup: Setup) -> u64,
    pub top_of_backward: fn(setup: Setup) -> u64,
    pub fits: fn(setup: Setup, card_bytes: u64) -> bool,
}

/// `Answers` from a module that defines the four functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge1_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge1::Answers {
            activation_bytes: $($m)::+::activation_bytes,
            batch_bytes: $($m)::+::batch_bytes,
            top_of_backward: $($m)::+::top_of_backward,
            fits: $($m)::+::fits,
        }
    };
}

#[doc(inline)]
pub use crate::challenge1_answers_of as answers_of;

const GIB: u64 = 1 << 30;

/// Bits for bytes.
const BITS: &str = "bytes, not bits: a float32 is 4 bytes";

/// Grades `answers` on fixed setups and on random ones drawn from `seed`: the pieces first
/// (a miss names its term), then `fits`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    let mut report = Report::new("Challenge 1 (the full batch)");
    report.mark_given("fits");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    grade_activation(&mut report, answers, &mut rng);
    grade_batch(&mut report, answers, &mut rng);
    grade_top(&mut report, answers, &mut rng);
    let first = report.fix_pieces_first(
        "fits",
        &["activation_bytes", "batch_bytes", "top_of_backward"],
    );
    for (setup, card_bytes) in fit_cases(&mut rng) {
        compare_fits(&mut report, answers, setup, card_bytes, &first(FITS_HINT));
    }
    // `y_pred`'s and the features' cases before the labels': an equation without one of them
    // misses the labels' cases too, and its first miss names it.
    let (before, rest): (Vec<_>, Vec<_>) = boundary_cases()
        .into_iter()
        .partition(|c| [boundary::Y_PRED, boundary::FEATURES].contains(&c.2));
    for &(setup, card_bytes, hint) in &before {
        compare_fits(&mut report, answers, setup, card_bytes, &first(hint));
    }
    for (setup, card_bytes) in label_cases() {
        compare_fits(&mut report, answers, setup, card_bytes, &first(LABELS_HINT));
    }
    for &(setup, card_bytes, hint) in &rest {
        compare_fits(&mut report, answers, setup, card_bytes, &first(hint));
    }
    report
}

/// `a`: the first hidden layer's output, as the engine allocated it.
fn grade_activation(report: &mut Report, answers: &Answers, rng: &mut impl rand::Rng) {
    let mut shapes = vec![(32, 2000), (FULL, 2000), (1, 5), (4096, 5000)];
    shapes.extend((0..4).map(|_| {
        (
            rng.random_range(1..=200_000u64),
            rng.random_range(1..=6000u64),
        )
    }));
    for (batch, width) in shapes {
        let expected = Parts::of(&Setup::lesson(width, 1, batch, Opt::Sgd)).activation;
        let f = answers.activation_bytes;
        let got = attempt_timed(f as usize, move || f(batch, width));
        let hint = Diagnosis::new(expected).times(8, BITS).hint(
            &got,
            "one float32 (4 bytes) per row per neuron: batch × width × 4",
        );
        report.compare(
            "activation_bytes",
            format!("activation_bytes(batch {batch}, width {width})"),
            &expected,
            "bytes the engine allocated for the first hidden layer's output",
            got,
            hint,
        );
    }
}

/// The batch's hints, each naming its term.
pub(crate) const Y_PRED_MISSING: &str = "`y_pred` is missing: the loop's predictions, a \
     float32 score per class per row, are alive the whole step beside the batch";
pub(crate) const FEATURES_MISSING: &str = "the features `x` are missing: inputs float32 values \
     per row";
pub(crate) const LABELS_MISSING: &str = "the labels `y` are missing: one int64 (8 bytes) per row";
pub(crate) const LABELS_4: &str = "each label is an int64 (8 bytes, as F.cross_entropy wants \
     them), not a 4-byte number";

/// `D`: the features, the labels and `y_pred`, as the engine allocated them.
fn grade_batch(report: &mut Report, answers: &Answers, rng: &mut impl rand::Rng) {
    for setup in piece_setups(rng) {
        let p = Parts::of(&setup);
        let expected = p.features + p.labels + p.y_pred;
        let f = answers.batch_bytes;
        let got = attempt_timed(f as usize, move || f(setup));
        let hint = Diagnosis::new(expected)
            .lacks(p.y_pred, Y_PRED_MISSING)
            .lacks(p.features, FEATURES_MISSING)
            .lacks(p.labels, LABELS_MISSING)
            .lacks(p.labels / 2, LABELS_4)
            .extra(p.labels, "8 bytes per label (an int64), not 16")
            .extra(p.y_pred, "`y_pred` is counted twice")
            .times(8, BITS)
            .hint(
                &got,
                "per row: inputs float32 features, one int64 label (8 bytes) and `y_pred`'s \
                 classes float32 scores",
            );
        report.compare(
            "batch_bytes",
            format!(
                "batch_bytes({setup}, {} inputs, {} classes)",
                setup.inputs, setup.classes
            ),
            &expected,
            "bytes the engine allocated for x, y and y_pred",
            got,
            hint,
        );
    }
}

/// The top of the backward pass's hints, each naming its term.
pub(crate) const TOP_TWO_GRADIENTS: &str = "the two batch × width gradients in flight are \
     missing: the one coming down and the ReLU's gradient made from it";
pub(crate) const TOP_ONE_SHORT: &str = "one batch × width tensor short: every hidden layer's \
     kept activation (L of them) plus two gradients in flight";
pub(crate) const TOP_ONE_MORE: &str = "one batch × width tensor too many: L kept activations \
     plus two gradients in flight, L + 2 in all";
pub(crate) const TOP_OUTPUT: &str = "the output layer's gradients G are missing: (width + 1) × \
     classes float32 values, made first";
pub(crate) const TOP_OUTPUT_BIAS: &str = "the output layer's bias gradient is missing: G is \
     (width + 1) × classes values";
pub(crate) const TOP_KEPT: &str = "the kept activations are missing: one batch × width output \
     per hidden layer";
pub(crate) const TOP_OTHER_GRADIENTS: &str = "only the output layer's gradients exist at the \
     top, not the other layers' gradients, which are not made yet";

/// `L·a + 2·a + G`: the kept activations, two gradients in flight, the output layer's
/// gradients, as the engine allocated them.
fn grade_top(report: &mut Report, answers: &Answers, rng: &mut impl rand::Rng) {
    for setup in piece_setups(rng) {
        let p = Parts::of(&setup);
        let expected = p.kept + 2 * p.in_flight + p.output_gradients;
        let f = answers.top_of_backward;
        let got = attempt_timed(f as usize, move || f(setup));
        let hint = Diagnosis::new(expected)
            .lacks(2 * p.in_flight, TOP_TWO_GRADIENTS)
            .lacks(p.in_flight, TOP_ONE_SHORT)
            .extra(p.in_flight, TOP_ONE_MORE)
            .lacks(p.output_gradients, TOP_OUTPUT)
            .lacks(p.output_bias_gradient, TOP_OUTPUT_BIAS)
            .lacks(p.kept, TOP_KEPT)
            .extra(p.gradients - p.output_gradients, TOP_OTHER_GRADIENTS)
            .times(8, BITS)
            .hint(
                &got,
                "every kept activation (L × a), two more batch × width gradients and the \
                 output layer's gradients, (width + 1) × classes float32 values",
            );
        report.compare(
            "top_of_backward",
            format!("top_of_backward({setup}, {} classes)", setup.classes),
            &expected,
            "bytes of the kept activations, two gradients in flight and the output layer's \
             gradients, as the engine allocated them",
            got,
            hint,
        );
    }
}

/// The hint for a wrong `fits` whose pieces pass.
const FITS_HINT: &str = "`fits` adds the model (parameters, Adam's state), your batch and \
     the busiest of the three moments: your top of the backward pass, its bottom (every \
     gradient) and the update (Adam's square roots) — as the stub gives it";

/// The hint for a wrong `fits` on a setup the labels decide.
const LABELS_HINT: &str = "a narrow network with a huge batch: the batch is most of the \
     step, and its labels decide it — each row's label is an int64 (8 bytes, as \
     F.cross_entropy wants), not a 4-byte number";

/// Asks `fits(setup, card_bytes)` and compares it with the engine's plan of the step.
fn compare_fits(report: &mut Report, answers: &Answers, setup: Setup, card_bytes: u64, hint: &str) {
    let f = answers.fits;
    let got: Result<bool, NoValue> = attempt_timed(f as usize, move || f(setup, card_bytes));
    let m = step(&setup.config(), setup.batch, card_bytes);
    let why = match &m.oom {
        Some(o) => format!(
            "the engine ran out of memory: tried to allocate {}",
            format_bytes(o.tried)
        ),
        None => format!(
            "the step peaked at {} reserved",
            format_bytes(m.peak_reserved)
        ),
    };
    report.compare(
        "fits",
        format!("fits({setup}) {}", card(card_bytes)),
        &m.fits(),
        why,
        got,
        hint,
    );
}

/// Setups whose answer does not hinge on the allocator's rounding: those that fit leave at
/// least 5 % of the card free, those that do not need at least 5 % more than the card even
/// before rounding. A learner's memory equation decides them either way.
fn fit_cases(rng: &mut impl rand::Rng) -> Vec<(Setup, u64)> {
    let fixed = [
        (Setup::lesson(2000, 1, FULL, Opt::Sgd), CARD_BYTES),
        (Setup::lesson(2000, 1, 32, Opt::Sgd), CARD_BYTES),
        (Setup::lesson(2000, 1, FULL, Opt::Sgd), 40 * GIB),
        (Setup::lesson(5000, 30, 32, Opt::Adam), CARD_BYTES),
        (Setup::lesson(5000, 30, 32, Opt::Adam), 8 * GIB),
        (Setup::lesson(5000, 30, 32, Opt::Adam), 12 * GIB),
        (Setup::lesson(5000, 30, 32, Opt::Sgd), 8 * GIB),
        (Setup::lesson(3000, 2, 200_000, Opt::Sgd), 8 * GIB),
        (Setup::lesson(1000, 4, FULL, Opt::Adam), 24 * GIB),
        // Deep and wide at batch 32: the gradients decide. Without them SGD's step would need
        // about one copy of the parameters (6 GB here) and fit; with them it needs two.
        (Setup::lesson(5000, 60, 32, Opt::Sgd), 8 * GIB),
        // Adam: four copies of the parameters fit, the five its update really holds do not.
        (Setup::lesson(5000, 58, 32, Opt::Adam), 24 * GIB),
    ];
    let mut cases: Vec<(Setup, u64)> = fixed.into_iter().filter(|(s, c)| robust(s, *c)).collect();
    let cards = [
        2 * GIB,
        4 * GIB,
        8 * GIB,
        CARD_BYTES,
        24 * GIB,
        40 * GIB,
        80 * GIB,
    ];
    let fixed_cases = cases.len();
    while cases.len() < fixed_cases + 8 {
        let batch = if rng.random_bool(0.2) {
            FULL
        } else {
            10f64.powf(rng.random_range(0.0..5.5)) as u64
        };
        let optimizer = if rng.random_bool(0.5) {
            Opt::Adam
        } else {
            Opt::Sgd
        };
        let setup = Setup::lesson(
            rng.random_range(5..=8000),
            rng.random_range(1..=40),
            batch.max(1),
            optimizer,
        );
        let card = cards[rng.random_range(0..cards.len())];
        if robust(&setup, card) {
            cases.push((setup, card));
        }
    }
    cases
}

/// How far a setup `fits` is asked about must clear the card, either way (a share of the
/// card): far enough that an equation without the allocator's rounding decides it rightly.
pub const FITS_MARGIN: f64 = 0.05;

fn robust(setup: &Setup, card: u64) -> bool {
    let need = needs(&setup.config(), setup.batch);
    let fits = step(&setup.config(), setup.batch, card).fits();
    if fits {
        need.peak_reserved as f64 <= (1.0 - FITS_MARGIN) * card as f64
    } else {
        need.peak_requested as f64 >= (1.0 + FITS_MARGIN) * card as f64
    }
}

/// The narrow networks (width, layers, optimizer) whose full step is put just past the
/// lesson's card by [`label_cases`]: the batch's bytes are most of what they need. None is
/// narrower than 3 (with 2 classes): below that the loss's own batch × classes tensors make
/// the busiest moment, which the page's equation leaves out (measured: 16 bytes per row more
/// than it at width 1, 8 at width 2, none from 3 on).
const LABEL_NETWORKS: [(u64, u64, Opt); 3] =
    [(3, 1, Opt::Sgd), (4, 2, Opt::Sgd), (5, 1, Opt::Adam)];

/// Setups that the labels' width decides: a narrow network whose batch is
/// chosen so that its step needs about two bytes per row more than the lesson's card. An
/// equation that counts each int64 label as 8 bytes says it does not fit, as the engine does;
/// one that counts 4 bytes (or none) says it fits. Only those that [`labels_decide`] keeps.
pub fn label_cases() -> Vec<(Setup, u64)> {
    LABEL_NETWORKS
        .into_iter()
        .filter_map(|(width, layers, optimizer)| {
            let need = |batch: u64| {
                needs(
                    &Setup::lesson(width, layers, batch, optimizer).config(),
                    batch,
                )
                .peak_requested as f64
            };
            // What a step needs grows linearly with the batch: two plans give the line.
            let (b1, b2) = (1u64 << 20, 1u64 << 22);
            let slope = (need(b2) - need(b1)) / (b2 - b1) as f64;
            let intercept = need(b1) - slope * b1 as f64;
            // need(batch) = card + 2 bytes per row.
            let batch = ((CARD_BYTES as f64 - intercept) / (slope - 2.0)).round() as u64;
            let setup = Setup::lesson(width, layers, batch, optimizer);
            labels_decide(&setup, CARD_BYTES).then_some((setup, CARD_BYTES))
        })
        .collect()
}

/// The engine says `setup` does not fit `card`, and what it needs exceeds the card by more
/// than one but less than three bytes per row: counting each label's 8 bytes decides it (a
/// 4-byte label drops 4 bytes per row, below the card), and the allocator's rounding (a few
/// MiB on a step of gigabytes) does not.
pub fn labels_decide(setup: &Setup, card: u64) -> bool {
    let need = needs(&setup.config(), setup.batch).peak_requested;
    let over = need.saturating_sub(card);
    !step(&setup.config(), setup.batch, card).fits() && over > setup.batch && over < 3 * setup.batch
}
