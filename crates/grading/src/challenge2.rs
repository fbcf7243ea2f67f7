//! Challenge 2: how deep before the card runs out.
//!
//! The learner writes three of the equation's model terms — the parameter count, the model's
//! bytes `P + S` and the update `P + R` — and the stub's `deepest_fit` adds them to the given
//! ones ([`crate::given`]: the batch's terms and the bottom of the backward pass `P + 3·a`)
//! one layer more at a time.
//! Each piece is compared with the engine's allocations, term by term ([`Parts`]), a miss
//! naming the term it lacks; `deepest_fit` with the engine's deepest network.

mod boundary;

use crate::card;
use crate::diagnose::Diagnosis;
use crate::measure::{deepest, needs};
use crate::parts::{Parts, piece_setups};
use crate::{Opt, Report, Setup, TIME_LIMIT, attempt_within};
use gpumem::lesson::CARD_BYTES;
use rand::{RngExt, SeedableRng};
use std::time::Duration;

/// The learner's functions (`deepest_fit` is given in the stub: a loop over the pieces and
/// [`crate::given`]'s terms).
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub parameter_count: fn(inputs: u64, width: u64, layers: u64, classes: u64) -> u64,
    pub model_bytes: fn(setup: Setup) -> u64,
    pub update: fn(setup: Setup) -> u64,
    pub deepest_fit: fn(setup: Setup, card_bytes: u64) -> u64,
}

/// `Answers` from a module that defines the four functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge2_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge2::Answers {
            parameter_count: $($m)::+::parameter_count,
            model_bytes: $($m)::+::model_bytes,
            update: $($m)::+::update,
            deepest_fit: $($m)::+::deepest_fit,
        }
    };
}

#[doc(inline)]
pub use crate::challenge2_answers_of as answers_of;

const GIB: u64 = 1 << 30;

/// Deepest network the grader will search for.
const MAX_LAYERS: u64 = 4096;

/// Bits for bytes.
const BITS: &str = "bytes, not bits: a float32 is 4 bytes";

/// Grades `answers` on fixed setups and random ones drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    grade_within(answers, seed, TIME_LIMIT)
}

/// [`grade`], waiting at most `limit` for each call of a learner's function (the proofs'
/// endless loop is reported after a short one).
pub fn grade_within(answers: &Answers, seed: u64, limit: Duration) -> Report {
    let mut report = Report::new("Challenge 2 (the deep network)");
    report.mark_given("deepest_fit");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    grade_parameter_count(&mut report, answers, limit, &mut rng);
    let setups = piece_setups(&mut rng);
    for &setup in &setups {
        compare_model(&mut report, answers, limit, setup);
    }
    for &setup in &setups {
        compare_update(&mut report, answers, limit, setup);
    }
    let first =
        report.fix_pieces_first("deepest_fit", &["parameter_count", "model_bytes", "update"]);
    for (setup, card_bytes) in depth_cases(&mut rng) {
        let found = deepest(&setup.config(), setup.batch, card_bytes, MAX_LAYERS)
            .expect("graders only plan valid setups");
        let hint = first(DEPTH_HINT);
        compare_depth(
            &mut report,
            answers,
            limit,
            (setup, card_bytes, found),
            &hint,
        );
    }
    for (setup, card_bytes, found, hint) in boundary::boundary_cases() {
        let hint = first(hint);
        compare_depth(
            &mut report,
            answers,
            limit,
            (setup, card_bytes, found),
            &hint,
        );
    }
    report
}

/// The parameter count's hints, each naming its term.
pub(crate) const BIASES: &str = "the biases are missing: a dense layer from n to m features \
     has n × m weights and m biases";
pub(crate) const INPUT_BIAS: &str = "the input layer's biases are missing: width of them";
pub(crate) const OUTPUT_BIAS: &str = "the output layer's biases are missing: classes of them";
pub(crate) const OUTPUT_LAYER: &str = "the output layer is missing: (width + 1) × classes";
pub(crate) const INPUT_LAYER: &str = "the input layer is missing: (inputs + 1) × width";
pub(crate) const HIDDEN_LAYERS: &str = "layers hidden layers are joined by layers − 1 \
     hidden-to-hidden layers of (width + 1) × width";

/// `P / 4`: every weight and bias, as the engine allocated them.
fn grade_parameter_count(
    report: &mut Report,
    answers: &Answers,
    limit: Duration,
    rng: &mut impl rand::Rng,
) {
    let mut shapes = vec![
        (2, 5000, 5, 2),
        (784, 128, 3, 10),
        (2, 2000, 1, 2),
        (1, 1, 1, 2),
    ];
    shapes.extend((0..4).map(|_| {
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
        let p = Parts::of(&setup);
        let one_more = Parts::of(&Setup {
            layers: layers + 1,
            ..setup
        })
        .hidden_layer;
        let expected = p.parameters / 4;
        let f = answers.parameter_count;
        let got = attempt_within(limit, f as usize, move || f(inputs, width, layers, classes));
        let hint = Diagnosis::new(expected)
            .lacks(p.biases / 4, BIASES)
            .lacks(p.input_bias / 4, INPUT_BIAS)
            .lacks(p.output_bias / 4, OUTPUT_BIAS)
            .lacks((p.biases - p.input_bias - p.output_bias) / 4, BIASES)
            .lacks(p.output_layer / 4, OUTPUT_LAYER)
            .lacks(p.input_layer / 4, INPUT_LAYER)
            .lacks(p.hidden_layer / 4, HIDDEN_LAYERS)
            .extra(one_more / 4, HIDDEN_LAYERS)
            .hint(
                &got,
                "count the input layer, every hidden-to-hidden layer and the output \
                 layer: n × m weights and m biases each",
            );
        report.compare(
            "parameter_count",
            format!("parameter_count({inputs} inputs, width {width}, {layers} layers, {classes} classes)"),
            &expected,
            "values the engine allocated for weights and biases, divided by 4 bytes",
            got,
            hint,
        );
    }
}

/// A setup as the pieces' checks show it: the inputs and classes count in `P`.
fn shown(s: &Setup) -> String {
    format!("{s}, {} inputs, {} classes", s.inputs, s.classes)
}

/// The model's hints.
pub(crate) const ADAM_STATE: &str = "Adam's state S is missing: two running averages per \
     parameter, 2 × P";
pub(crate) const ADAM_TWO: &str = "Adam keeps two running averages per parameter (exp_avg and \
     exp_avg_sq), not one";
pub(crate) const NOT_GRADIENTS: &str = "model_bytes is P + S, without the gradients: they \
     exist from the backward pass to the update, and the moments count them";

fn compare_model(report: &mut Report, answers: &Answers, limit: Duration, setup: Setup) {
    let p = Parts::of(&setup);
    let expected = p.parameters + p.state;
    let f = answers.model_bytes;
    let got = attempt_within(limit, f as usize, move || f(setup));
    let hint = Diagnosis::new(expected)
        .lacks(p.state, ADAM_STATE)
        .lacks(p.state / 2, ADAM_TWO)
        .extra(p.state / 2, ADAM_TWO)
        .extra(p.gradients, NOT_GRADIENTS)
        .lacks(p.parameters, "the parameters themselves are missing")
        .times(8, BITS)
        .hint(
            &got,
            "4 bytes per value: the parameters and, for Adam, two running averages \
             per parameter",
        );
    report.compare(
        "model_bytes",
        format!("model_bytes({})", shown(&setup)),
        &expected,
        "bytes the engine allocated for the parameters and the optimizer's state",
        got,
        hint,
    );
}

/// The update's hints.
pub(crate) const ROOTS: &str = "Adam's square roots R are missing: foreach Adam takes the \
     square root of every running average at once, a temporary as large as the parameters";
pub(crate) const UPDATE_GRADIENTS: &str = "the gradients are missing: they remain through the \
     update, until the next zero_grad()";

fn compare_update(report: &mut Report, answers: &Answers, limit: Duration, setup: Setup) {
    let p = Parts::of(&setup);
    let expected = p.gradients + p.roots;
    let f = answers.update;
    let got = attempt_within(limit, f as usize, move || f(setup));
    let sgd_roots = if setup.optimizer == Opt::Sgd {
        "SGD makes no square roots: its update holds only the gradients"
    } else {
        "one set of square roots, as large as the parameters (PyTorch 2.1 and later)"
    };
    let hint = Diagnosis::new(expected)
        .lacks(p.roots, ROOTS)
        .lacks(p.gradients, UPDATE_GRADIENTS)
        .extra(p.parameters, sgd_roots)
        .extra(
            p.state,
            "Adam's running averages are counted in model_bytes, not here",
        )
        .times(8, BITS)
        .hint(
            &got,
            "every gradient (P) and, for Adam, square roots as large as the \
             parameters (R)",
        );
    report.compare(
        "update",
        format!("update({})", shown(&setup)),
        &expected,
        "bytes of every gradient and Adam's square roots, as the engine allocated them",
        got,
        hint,
    );
}

/// The hint for a wrong `deepest_fit`.
const DEPTH_HINT: &str = "`deepest_fit`, as the stub gives it, adds one layer at a time \
     while the model (your model_bytes), the batch and the busiest of the three moments (the \
     given top and bottom of the backward pass, your update) fit the card";

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
