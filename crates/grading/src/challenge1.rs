//! Challenge 1: the whole training set as one batch.
//!
//! The learner works out the bytes of one activation, of all the activations a step keeps
//! for the backward pass, and whether a whole training step fits on a card. Each answer is
//! compared with what the engine measures on planned steps.

mod boundary;

use crate::card;
use crate::measure::{needs, requested, step, trace};
use crate::{Opt, Report, Setup, attempt_timed};
use boundary::boundary_cases;
use gpumem::Role;
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use rand::{RngExt, SeedableRng};

/// The learner's functions.
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub activation_bytes: fn(batch: u64, width: u64) -> u64,
    pub stored_activation_bytes: fn(batch: u64, width: u64, layers: u64) -> u64,
    pub fits: fn(setup: Setup, card_bytes: u64) -> bool,
}

/// `Answers` from a module that defines the three functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge1_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge1::Answers {
            activation_bytes: $($m)::+::activation_bytes,
            stored_activation_bytes: $($m)::+::stored_activation_bytes,
            fits: $($m)::+::fits,
        }
    };
}

#[doc(inline)]
pub use crate::challenge1_answers_of as answers_of;

const GIB: u64 = 1 << 30;

/// A hidden layer's output, saved for the backward pass.
fn is_activation(role: Role) -> bool {
    matches!(role, Role::Activation { .. })
}

/// Grades `answers` on fixed setups and on random ones drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    let mut report = Report::new("Challenge 1 (the full batch)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);

    let mut shapes = vec![(32, 2000), (FULL, 2000), (1, 5), (4096, 5000)];
    shapes.extend((0..6).map(|_| {
        (
            rng.random_range(1..=200_000u64),
            rng.random_range(1..=6000u64),
        )
    }));
    for (batch, width) in shapes {
        let t = trace(&MlpConfig::lesson(width), batch);
        let expected = requested(&t, |r| r == Role::Activation { layer: 0 });
        report.compare(
            "activation_bytes",
            format!("activation_bytes(batch {batch}, width {width})"),
            &expected,
            "bytes the engine allocated for the first hidden layer's output",
            {
                let f = answers.activation_bytes;
                attempt_timed(f as usize, move || f(batch, width))
            },
            "one float32 (4 bytes) per row per neuron: batch × width × 4 — bytes, not bits",
        );
    }

    let mut stored = vec![(FULL, 2000, 1), (32, 5000, 5), (1000, 100, 8)];
    stored.extend((0..5).map(|_| {
        (
            rng.random_range(1..=100_000u64),
            rng.random_range(1..=3000u64),
            rng.random_range(1..=8u64),
        )
    }));
    for (batch, width, layers) in stored {
        let t = trace(&MlpConfig::lesson(width).with_layers(layers), batch);
        let expected = requested(&t, is_activation);
        report.compare(
            "stored_activation_bytes",
            format!("stored_activation_bytes(batch {batch}, width {width}, {layers} layers)"),
            &expected,
            "bytes of every hidden layer's output kept for the backward pass",
            {
                let f = answers.stored_activation_bytes;
                attempt_timed(f as usize, move || f(batch, width, layers))
            },
            "every hidden layer keeps its batch × width output until the backward pass reaches it",
        );
    }

    for (setup, card_bytes) in fit_cases(&mut rng) {
        compare_fits(&mut report, answers, setup, card_bytes, FITS_HINT);
    }
    // `y_pred`'s and the features' cases before the labels': an equation without one of them
    // misses the labels' cases too, and its first miss names it.
    let (first, rest): (Vec<_>, Vec<_>) = boundary_cases()
        .into_iter()
        .partition(|c| [boundary::Y_PRED, boundary::FEATURES].contains(&c.2));
    for &(setup, card_bytes, hint) in &first {
        compare_fits(&mut report, answers, setup, card_bytes, hint);
    }
    for (setup, card_bytes) in label_cases() {
        compare_fits(&mut report, answers, setup, card_bytes, LABELS_HINT);
    }
    for &(setup, card_bytes, hint) in &rest {
        compare_fits(&mut report, answers, setup, card_bytes, hint);
    }
    report
}

/// The hint for a wrong `fits`.
const FITS_HINT: &str = "add parameters, a gradient each, Adam's 2 values per parameter, the \
     batch (features and an 8-byte int64 label per row) and what is alive at the busiest \
     moment: the top of the backward pass holds every kept activation plus two more batch × \
     width gradients; the bottom holds every gradient; Adam's update adds square roots as \
     large as all the parameters";

/// The hint for a wrong `fits` on a setup the labels decide.
const LABELS_HINT: &str = "a narrow network with a huge batch: the batch is most of the \
     step, and its labels decide it — each row's label is an int64 (8 bytes, as \
     F.cross_entropy wants), not a 4-byte number";

/// Asks `fits(setup, card_bytes)` and compares it with the engine's plan of the step.
fn compare_fits(report: &mut Report, answers: &Answers, setup: Setup, card_bytes: u64, hint: &str) {
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
        {
            let f = answers.fits;
            attempt_timed(f as usize, move || f(setup, card_bytes))
        },
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
