//! Challenge 5: more than one card.
//!
//! The learner writes what one card of a group holds under each scheme that splits the batch
//! (`card_bytes`, with a per-card batch), then the fewest cards that fit (`fewest_cards`).
//! Both are compared with the engine's planned groups ([`gpumem::parallel::measure_group`]):
//! the fullest card's peak of requested bytes, within [`TOLERANCE`], and the fewest cards on
//! which no card runs out.

mod cases;
mod terms;

use crate::{NoValue, Report, Setup, attempt, card};
use cases::{LESSON_CARD, fewest, graded_schemes, lesson_setups, random_setup, wants};
use gpumem::size::format_bytes;
use rand::{RngExt, SeedableRng};

pub use gpumem::parallel::Scheme;
pub use terms::{Terms, largest_share, terms};

/// The learner's functions.
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub card_bytes: fn(setup: Setup, scheme: Scheme, cards: u64) -> u64,
    pub fewest_cards: fn(setup: Setup, scheme: Scheme, card_capacity: u64) -> Option<u64>,
}

/// `Answers` from a module that defines the two functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge5_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge5::Answers {
            card_bytes: $($m)::+::card_bytes,
            fewest_cards: $($m)::+::fewest_cards,
        }
    };
}

#[doc(inline)]
pub use crate::challenge5_answers_of as answers_of;

/// The most cards `fewest_cards` tries.
pub const MAX_CARDS: u64 = 8;

/// How far a `card_bytes` answer may be from the engine's peak, as a fraction of it. A sum
/// of terms taken at a few moments (the top and the bottom of the backward pass, the update,
/// building the model) is what the exercise asks for; the engine's peak can fall between
/// those moments. Measured (`cargo run -p challenge5 --example calibrate`: the lesson's
/// setups and 25 random ones for each of six seeds, every graded scheme on 1, 2, 3, 4 and 8
/// cards), the reference solution is within 0.3 % under DDP and ZeRO-1, 8.1 % under ZeRO-2
/// and 12.1 % under ZeRO-3 (a ZeRO-3 card partway through its backward pass, holding some
/// of its gradient shards and some of its activations). Each mistake the proofs make costs
/// more than this on some lesson setup.
pub const TOLERANCE: f64 = 0.15;

/// The lesson's setups and `count` random ones drawn from `seed` as [`grade`] draws them:
/// for measuring how far an answer is (`examples/calibrate.rs`).
pub fn calibration_setups(seed: u64, count: usize) -> Vec<Setup> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut setups = lesson_setups();
    setups.extend((0..count).map(|_| random_setup(&mut rng)));
    setups
}

/// The engine's peak for `setup` (its per-card batch) under `scheme` on `cards` cards: the
/// fullest card's peak of requested bytes, what `card_bytes` is graded against.
pub fn measured_peak(setup: Setup, scheme: Scheme, cards: u64) -> u64 {
    wants(setup, scheme, cards)
}

/// Group sizes the lesson's setups are graded on.
const LESSON_CARDS: [u64; 4] = [1, 2, 4, 8];
/// Group sizes a random setup may be graded on.
const RANDOM_CARDS: [u64; 5] = [1, 2, 3, 4, 8];

/// Grades `answers` on fixed setups and random ones drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    let mut report = Report::new("Challenge 5 (more than one card)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let lesson = lesson_setups();
    let mut cases = Vec::new();
    for &setup in &lesson {
        for scheme in graded_schemes() {
            cases.extend(LESSON_CARDS.map(|n| (setup, scheme, n)));
        }
    }
    for _ in 0..6 {
        let setup = random_setup(&mut rng);
        for scheme in graded_schemes() {
            cases.push((
                setup,
                scheme,
                RANDOM_CARDS[rng.random_range(0..RANDOM_CARDS.len())],
            ));
        }
    }
    for (setup, scheme, n) in cases {
        grade_card_bytes(&mut report, answers, setup, scheme, n);
    }
    for (setup, scheme, capacity, expected) in fewest_cases(&lesson, &mut rng) {
        report.compare(
            "fewest_cards",
            format!("fewest_cards({setup}, {scheme}) {}", card(capacity)),
            &expected,
            format!("the fewest cards, up to {MAX_CARDS}, on which the engine's plan fits"),
            attempt(|| (answers.fewest_cards)(setup, scheme, capacity)),
            "try 1, 2, 3, … cards up to MAX_CARDS and return the first on which card_bytes \
             fits the card; None when even MAX_CARDS do not (DDP never fits more on more \
             cards)",
        );
    }
    report
}

fn grade_card_bytes(report: &mut Report, answers: &Answers, setup: Setup, scheme: Scheme, n: u64) {
    let measured = wants(setup, scheme, n);
    let got = attempt(|| (answers.card_bytes)(setup, scheme, n));
    report.compare(
        "card_bytes",
        format!(
            "card_bytes({setup}, {scheme}, {n} card{})",
            if n == 1 { "" } else { "s" }
        ),
        &measured,
        format!(
            "{}: the fullest card's peak, planned; within {:.0} % passes",
            format_bytes(measured),
            TOLERANCE * 100.0
        ),
        snap(got, measured),
        hint(scheme),
    );
}

/// A learner's value within [`TOLERANCE`] of `measured` counts as `measured`.
fn snap(got: Result<u64, NoValue>, measured: u64) -> Result<u64, NoValue> {
    got.map(|v| if within(v, measured) { measured } else { v })
}

/// Whether `value` is within [`TOLERANCE`] of `measured`.
pub fn within(value: u64, measured: u64) -> bool {
    value.abs_diff(measured) as f64 <= TOLERANCE * measured as f64
}

/// What usually causes a miss under `scheme`.
fn hint(scheme: Scheme) -> String {
    let activations = "activations are never sharded: each card keeps those of its own \
                       batch, as one card does";
    match scheme {
        Scheme::Ddp | Scheme::DdpBucketView => format!(
            "DDP replicates the model: every card holds all the parameters, all the gradients \
             and all the optimizer state, whatever the number of cards; plain DDP's buckets \
             are a second copy of the gradients, with gradient_as_bucket_view the gradients \
             live in them; {activations}"
        ),
        Scheme::Zero1 => format!(
            "ZeRO-1 divides only the optimizer state (and Adam's update with it) by the \
             cards; parameters and gradients stay whole; {activations}"
        ),
        Scheme::Zero2 => format!(
            "ZeRO-2 divides parameters, gradients and optimizer state at rest, but each layer \
             gathered in the forward pass stays whole until its backward pass, beside two \
             layers of communication buffers; {activations}"
        ),
        _ => format!(
            "ZeRO-3 divides parameters, gradients and optimizer state, but the layer that runs \
             is gathered whole, the next one is prefetched and its gradient needs a buffer \
             (about three whole layers), and the model is built whole on each card before \
             it is sharded; {activations}"
        ),
    }
}

/// `(setup, scheme, capacity, fewest)`: the lesson's setups on the lesson's card, and random
/// setups on cards sized between two group sizes — kept only where the answer does not hinge
/// on [`TOLERANCE`] (an answer within it finds the same number of cards).
fn fewest_cases(
    lesson: &[Setup],
    rng: &mut impl rand::Rng,
) -> Vec<(Setup, Scheme, u64, Option<u64>)> {
    let mut out = Vec::new();
    for &setup in &lesson[..2] {
        for scheme in graded_schemes() {
            out.push((setup, scheme, LESSON_CARD));
        }
    }
    for _ in 0..30 {
        let setup = random_setup(rng);
        let schemes = graded_schemes();
        let scheme = schemes[rng.random_range(0..schemes.len())];
        let k = rng.random_range(1..=MAX_CARDS);
        let capacity = (wants(setup, scheme, k) as f64 * (1.0 + 2.0 * TOLERANCE)) as u64;
        out.push((setup, scheme, capacity));
    }
    let robust: Vec<_> = out
        .into_iter()
        .map(|(s, scheme, c)| (s, scheme, c, fewest(s, scheme, c, MAX_CARDS)))
        .filter(|&(s, scheme, c, f)| robust(s, scheme, c, f))
        .collect();
    let lesson_cases = robust.iter().filter(|c| lesson.contains(&c.0)).count();
    robust.into_iter().take(lesson_cases + 6).collect()
}

/// Fewer cards than `fewest` need more than the card even at the tolerance's low end; at
/// `fewest`, the tolerance's high end still fits.
fn robust(setup: Setup, scheme: Scheme, capacity: u64, fewest: Option<u64>) -> bool {
    let below = fewest.map_or(MAX_CARDS, |f| f - 1);
    let too_big =
        (1..=below).all(|n| wants(setup, scheme, n) as f64 * (1.0 - TOLERANCE) > capacity as f64);
    let fits = fewest
        .is_none_or(|f| wants(setup, scheme, f) as f64 * (1.0 + TOLERANCE) <= capacity as f64);
    too_big && fits
}
