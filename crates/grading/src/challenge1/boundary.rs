//! `fits` cases at the boundary of one term: a card just under what the engine's plan of
//! the step requests (it cannot fit), and one just over what it reserves (it fits). An
//! equation that leaves the term out, or counts it twice, lands on the wrong side of one of
//! them; one within `slack` of the engine's count lands on the right side of both.

use crate::measure::{needs, step};
use crate::{Opt, Setup};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;

/// A setup built so that one term decides it, the slack either side of the engine's count
/// (a share of it: larger than the rounding a learner's equation cannot see, smaller than
/// the term) and the hint that names the term.
struct Term {
    setup: Setup,
    slack: f64,
    hint: &'static str,
}

pub(super) const Y_PRED: &str = "the loop's `y_pred` (batch × classes float32 scores) is alive the whole \
     step, beside the batch; with many classes it is far more than the labels";

pub(super) const FEATURES: &str = "the batch is alive the whole step: each row's features \
     (inputs float32 values) beside its label — with many inputs far more than the label";

const PARAMETERS: &str = "count every layer's parameters: each dense layer has a bias per \
     output neuron beside its weights — the input layer, every hidden-to-hidden layer and the \
     output layer (width + 1) × classes — and each is there again as a gradient and, for \
     Adam, twice as running averages and once as a square root in the update";

const TOP: &str = "the top of the backward pass holds every kept activation (one per hidden \
     layer) plus two more batch × width gradients and the output layer's gradients — not the \
     other layers' gradients, which are not made yet";

const BOTTOM: &str = "the bottom of the backward pass holds every gradient (as large as all \
     the parameters) beside one kept activation and two batch × width gradients in flight: \
     three batch × width tensors";

const UPDATE: &str = "Adam's update holds every gradient and square roots as large as all the \
     parameters, beside the parameters and the two running averages: five copies";

/// The terms' setups, the largest share of slack first: a mistake's first miss is the case
/// of the largest term it gets wrong.
fn terms() -> Vec<Term> {
    let t = |setup, slack, hint| Term { setup, slack, hint };
    vec![
        // y_pred: 100 classes, 400 bytes a row against the labels' 8.
        t(
            Setup {
                classes: 100,
                ..Setup::lesson(500, 1, 100_000, Opt::Sgd)
            },
            0.01,
            Y_PRED,
        ),
        // The features: 100 inputs, 400 bytes a row against the labels' 8.
        t(
            Setup {
                inputs: 100,
                ..Setup::lesson(500, 1, 100_000, Opt::Sgd)
            },
            0.01,
            FEATURES,
        ),
        // Deep at a large batch: the kept activations decide, each 1/12 of the step.
        t(Setup::lesson(3000, 10, 20_000, Opt::Sgd), 0.004, TOP),
        t(Setup::lesson(1000, 40, 1000, Opt::Sgd), 0.004, TOP),
        // Two wide layers at a modest batch: every gradient beside three activations.
        t(Setup::lesson(5000, 2, 2000, Opt::Sgd), 0.002, BOTTOM),
        t(Setup::lesson(3000, 10, 3000, Opt::Sgd), 0.002, BOTTOM),
        // Adam at a small batch: its update decides.
        t(Setup::lesson(5000, 2, 32, Opt::Adam), 0.002, UPDATE),
        // Narrow, deep, Adam: the biases are 1/65 of the parameters.
        t(Setup::lesson(64, 200, 32, Opt::Adam), 0.001, PARAMETERS),
        // The same to a millionth of the step: more than the 4 bytes the page's equation is
        // under the engine here, less than the 40 of the output layer's bias (five copies).
        t(Setup::lesson(64, 200, 32, Opt::Adam), 1e-6, PARAMETERS),
        t(Setup::lesson(1024, 3, 4096, Opt::Sgd), 0.0005, PARAMETERS),
        t(Setup::lesson(2000, 1, FULL, Opt::Sgd), 0.0005, PARAMETERS),
        // Deep at a large batch to 32 bytes (the equation is 8 under the engine): the output
        // layer's gradients, made first, are there too. Last: a parameter left out misses
        // here too, and its first miss is one of the parameters' cases above.
        t(Setup::lesson(3000, 10, 20_000, Opt::Sgd), 1e-8, TOP),
    ]
}

/// The boundary cases: `(setup, card, hint)`, each card one the engine decides (under the
/// requested peak it cannot fit; over the reserved peak, planned on the card, it fits).
pub(super) fn boundary_cases() -> Vec<(Setup, u64, &'static str)> {
    let mut cases = Vec::new();
    for Term { setup, slack, hint } in terms() {
        let need = needs(&setup.config(), setup.batch);
        let under = need.peak_requested - (slack * need.peak_requested as f64) as u64;
        let over = need.peak_reserved + (slack * need.peak_reserved as f64) as u64;
        for card in [under, over] {
            let fits = step(&setup.config(), setup.batch, card).fits();
            if fits == (card == over) {
                cases.push((setup, card, hint));
            }
        }
    }
    cases
}
