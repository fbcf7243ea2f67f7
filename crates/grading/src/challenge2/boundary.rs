//! `deepest_fit` cases at the boundary of one term: cards just under what one layer more
//! than `depth` requests, and just over what `depth` layers reserve — the engine fits
//! `depth` layers on both. An equation that leaves a term out finds one layer more on the
//! first; one that counts a term twice finds one fewer on the second.

use super::MAX_LAYERS;
use crate::measure::{deepest, needs};
use crate::{Opt, Setup};

/// A setup and depth where one term is larger than the slack either side (bytes), with
/// the hint that names the term.
struct Term {
    setup: Setup,
    depth: u64,
    slack: u64,
    hint: &'static str,
}

const BATCH: &str = "the batch is alive the whole step: each row's float32 features, its \
     8-byte int64 label and the loop's `y_pred` (classes float32 scores) — at a large batch \
     that decides one layer more or less";

const OUTPUT: &str = "the top of the backward pass holds the output layer's gradients, \
     (width + 1) × classes values, beside every kept activation and two batch × width \
     gradients";

const BOTTOM: &str = "the bottom of the backward pass holds every gradient beside three \
     batch × width tensors (one kept activation, two gradients in flight)";

/// The terms' setups, the largest first.
fn terms() -> Vec<Term> {
    let t = |setup, depth, slack, hint| Term {
        setup,
        depth,
        slack,
        hint,
    };
    vec![
        // Narrow at a huge batch: the batch is a quarter of the step, a layer 1/40 of it.
        t(
            Setup::lesson(8, 40, 10_000_000, Opt::Sgd),
            40,
            1 << 20,
            BATCH,
        ),
        // Deep at a large batch: the top decides, to 64 bytes.
        t(Setup::lesson(3000, 10, 20_000, Opt::Sgd), 10, 64, OUTPUT),
        // Wide at a modest batch: the bottom decides.
        t(Setup::lesson(5000, 2, 2000, Opt::Sgd), 2, 1 << 16, BOTTOM),
    ]
}

/// The boundary cases: `(setup, card, depth, hint)`, each depth the engine's search finds
/// on that card.
pub(super) fn boundary_cases() -> Vec<(Setup, u64, u64, &'static str)> {
    let mut cases = Vec::new();
    for Term {
        setup,
        depth,
        slack,
        hint,
    } in terms()
    {
        let at = |layers: u64| needs(&setup.config().with_layers(layers), setup.batch);
        let under = at(depth + 1).peak_requested.saturating_sub(slack);
        let over = at(depth).peak_reserved + slack;
        for card in [under, over] {
            if deepest(&setup.config(), setup.batch, card, MAX_LAYERS) == Some(depth) {
                cases.push((setup, card, depth, hint));
            }
        }
    }
    cases
}
