//! Challenge 2: how deep before the card runs out.
//!
//! The learner counts a network's parameters, the bytes that live as long as the model,
//! and the deepest network whose training step fits a card. Answers are compared with the
//! engine's planned models and steps.

mod boundary;

use crate::card;
use crate::measure::{blocks, deepest, needs, requested, trace};
use crate::{Opt, Report, Setup, TIME_LIMIT, attempt_within};
use gpumem::Role;
use gpumem::lesson::CARD_BYTES;
use gpumem::size::format_bytes;
use rand::{RngExt, SeedableRng};
use std::time::Duration;

/// The learner's functions.
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub parameter_count: fn(inputs: u64, width: u64, layers: u64, classes: u64) -> u64,
    pub model_bytes: fn(setup: Setup) -> u64,
    pub deepest_fit: fn(setup: Setup, card_bytes: u64) -> u64,
}

/// `Answers` from a module that defines the three functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge2_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge2::Answers {
            parameter_count: $($m)::+::parameter_count,
            model_bytes: $($m)::+::model_bytes,
            deepest_fit: $($m)::+::deepest_fit,
        }
    };
}

#[doc(inline)]
pub use crate::challenge2_answers_of as answers_of;

const GIB: u64 = 1 << 30;

/// Deepest network the grader will search for.
const MAX_LAYERS: u64 = 4096;

/// A weight or a bias, not their gradients or optimizer state.
fn is_parameter(role: Role) -> bool {
    matches!(role, Role::Parameter { .. })
}

/// A parameter, its gradient or its optimizer state, not the update's temporaries.
fn is_model_tensor(role: Role) -> bool {
    role.is_model()
}

/// Grades `answers` on fixed setups and random ones drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    grade_within(answers, seed, TIME_LIMIT)
}

/// [`grade`], waiting at most `limit` for each call of a learner's function (the proofs'
/// endless loop is reported after a short one).
pub fn grade_within(answers: &Answers, seed: u64, limit: Duration) -> Report {
    let mut report = Report::new("Challenge 2 (the deep network)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);

    let mut shapes = vec![
        (2, 5000, 5, 2),
        (2, 2000, 1, 2),
        (784, 128, 3, 10),
        (1, 1, 1, 2),
    ];
    shapes.extend((0..6).map(|_| {
        (
            rng.random_range(1..=1000u64),
            rng.random_range(1..=8000u64),
            rng.random_range(1..=20u64),
            rng.random_range(2..=100u64),
        )
    }));
    for (inputs, width, layers, classes) in shapes {
        let setup = Setup {
            inputs,
            width,
            layers,
            classes,
            batch: 1,
            optimizer: Opt::Sgd,
        };
        let expected = requested(&trace(&setup.config(), 1), is_parameter) / 4;
        report.compare(
            "parameter_count",
            format!("parameter_count({inputs} inputs, width {width}, {layers} layers, {classes} classes)"),
            &expected,
            "values the engine allocated for weights and biases, divided by 4 bytes",
            { let f = answers.parameter_count; attempt_within(limit, f as usize, move || f(inputs, width, layers, classes)) },
            "a dense layer from n to m features has n × m weights and m biases; count the \
             input layer, every hidden-to-hidden layer and the output layer",
        );
    }

    let mut models = vec![
        Setup::lesson(5000, 5, 32, Opt::Sgd),
        Setup::lesson(5000, 5, 32, Opt::Adam),
        Setup::lesson(2000, 1, 32, Opt::Sgd),
    ];
    models.extend((0..5).map(|_| {
        let opt = if rng.random_bool(0.5) {
            Opt::Adam
        } else {
            Opt::Sgd
        };
        Setup::lesson(
            rng.random_range(1..=8000),
            rng.random_range(1..=20),
            32,
            opt,
        )
    }));
    for setup in models {
        let t = trace(&setup.config(), 1);
        let exact = requested(&t, is_model_tensor);
        report.compare(
            "model_bytes",
            format!("model_bytes({setup})"),
            &exact,
            format!(
                "requested by the model's tensors in the first step; {} after the allocator's \
                 rounding",
                format_bytes(blocks(&t, is_model_tensor))
            ),
            {
                let f = answers.model_bytes;
                attempt_within(limit, f as usize, move || f(setup))
            },
            "4 bytes per value: the parameters, one gradient per parameter (made by the \
             backward pass), and for Adam two running averages per parameter (made by its \
             first update)",
        );
    }

    for (setup, card_bytes) in depth_cases(&mut rng) {
        let found = deepest(&setup.config(), setup.batch, card_bytes, MAX_LAYERS)
            .expect("graders only plan valid setups");
        compare_depth(
            &mut report,
            answers,
            limit,
            (setup, card_bytes, found),
            DEPTH_HINT,
        );
    }
    for (setup, card_bytes, found, hint) in boundary::boundary_cases() {
        compare_depth(
            &mut report,
            answers,
            limit,
            (setup, card_bytes, found),
            hint,
        );
    }
    report
}

/// The hint for a wrong `deepest_fit`.
const DEPTH_HINT: &str = "each hidden layer adds (width + 1) × width parameters — a gradient \
     each and, for Adam, two running averages and a square root in its update — and one more \
     kept batch × width activation; the busiest moment is the top of the backward pass (the \
     kept activations and two gradients beside them), its bottom (every gradient) or Adam's \
     update (five times the parameters)";

/// Asks `deepest_fit(setup, card)` and compares it with `found`, the engine's depth.
fn compare_depth(
    report: &mut Report,
    answers: &Answers,
    limit: Duration,
    (setup, card_bytes, found): (Setup, u64, u64),
    hint: &str,
) {
    let f = answers.deepest_fit;
    report.compare(
        "deepest_fit",
        format!(
            "deepest_fit(width {}, batch {}, {:?}) {}",
            setup.width,
            setup.batch,
            setup.optimizer,
            card(card_bytes)
        ),
        &found,
        "hidden layers of the deepest network whose training step the engine fitted",
        attempt_within(limit, f as usize, move || f(setup, card_bytes)),
        hint,
    );
}

/// Setups whose deepest fit does not hinge on the allocator's rounding: one more layer
/// than the engine fitted needs more than the card even before rounding, so a learner's
/// equation finds the same depth.
fn depth_cases(rng: &mut impl rand::Rng) -> Vec<(Setup, u64)> {
    let fixed = [
        (Setup::lesson(5000, 1, 32, Opt::Adam), CARD_BYTES),
        (Setup::lesson(2000, 1, 32, Opt::Sgd), 4 * GIB),
        (Setup::lesson(1000, 1, 100_000, Opt::Sgd), 8 * GIB),
        (Setup::lesson(4096, 1, 4096, Opt::Adam), 24 * GIB),
        (Setup::lesson(5000, 1, 32, Opt::Sgd), CARD_BYTES),
    ];
    let mut cases: Vec<(Setup, u64)> = fixed.into_iter().filter(|(s, c)| robust(s, *c)).collect();
    let cards = [GIB, 4 * GIB, 8 * GIB, CARD_BYTES, 24 * GIB];
    let want = cases.len() + 5;
    while cases.len() < want {
        let optimizer = if rng.random_bool(0.5) {
            Opt::Adam
        } else {
            Opt::Sgd
        };
        let batch = 10f64.powf(rng.random_range(0.0..5.0)) as u64;
        let setup = Setup::lesson(rng.random_range(500..=6000), 1, batch.max(1), optimizer);
        let card = cards[rng.random_range(0..cards.len())];
        if robust(&setup, card) {
            cases.push((setup, card));
        }
    }
    cases
}

fn robust(setup: &Setup, card: u64) -> bool {
    let Some(depth) =
        deepest(&setup.config(), setup.batch, card, MAX_LAYERS).filter(|&d| d < MAX_LAYERS)
    else {
        return false;
    };
    let one_more = needs(&setup.config().with_layers(depth + 1), setup.batch);
    one_more.peak_requested > card
}
