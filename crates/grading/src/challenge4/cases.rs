//! The cases the grader asks about: fixed setups the book talks about, and random ones from
//! the seed, each one a strategy (or none) is needed for.

use super::{
    Checkpointing, FAMILIES, GIB, NEEDED_ABOVE, Precision, Settings, example, planned, requested,
    run,
};
use crate::{Opt, Setup};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::CARD_BYTES;
use rand::RngExt;

/// Setups and settings for `peak_bytes`: every strategy alone and combined.
pub(super) fn equation_cases(rng: &mut impl rand::Rng) -> Vec<(Setup, Settings)> {
    use Checkpointing::{Every, Off, Sqrt};
    use Precision::{Float32, Float64, Mixed};
    let s = |precision, batch: u64, steps: u64, checkpointing| {
        Settings::split(batch, steps, precision, checkpointing)
    };
    let lesson = Setup::lesson(2000, 1, FULL, Opt::Sgd);
    let wide = Setup::lesson(5000, 5, 32, Opt::Adam);
    let deep = Setup::lesson(1000, 16, 200_000, Opt::Sgd);
    let odd = Setup::lesson(500, 7, 99_999, Opt::Adam);
    // A wide model at a small batch: autocast's float16 copies of the weights cost more
    // than mixed precision saves on the activations.
    let copies = Setup::lesson(5000, 2, 32, Opt::Sgd);
    let mut cases = vec![
        (lesson, Settings::plain(FULL)),
        (lesson, s(Mixed, FULL, 1, Off)),
        (lesson, s(Float32, FULL, 2, Off)),
        (lesson, s(Float64, FULL, 1, Off)),
        (wide, s(Mixed, 32, 1, Off)),
        (deep, s(Float32, 200_000, 1, Sqrt)),
        (deep, s(Mixed, 200_000, 3, Every(3))),
        (odd, s(Float32, 99_999, 4, Every(2))),
        (copies, s(Mixed, 32, 1, Off)),
    ];
    while cases.len() < 15 {
        let layers = rng.random_range(1..=20u64);
        let optimizer = if rng.random_bool(0.5) {
            Opt::Adam
        } else {
            Opt::Sgd
        };
        let batch = 10f64.powf(rng.random_range(2.0..5.7)) as u64;
        let setup = Setup::lesson(rng.random_range(200..=6000), layers, batch, optimizer);
        let precision = [Float32, Mixed, Float64][rng.random_range(0..3usize)];
        let steps = rng.random_range(1..=8u64).min(batch);
        let checkpointing = match rng.random_range(0..3u32) {
            0 => Off,
            1 => Sqrt,
            _ => Every(rng.random_range(1..=layers)),
        };
        cases.push((setup, s(precision, batch, steps, checkpointing)));
    }
    cases
}

/// Setups and cards for `choose_settings`: each needs a different mix of strategies (or
/// none), and none hinges on the allocator's rounding.
pub(super) fn choice_cases(rng: &mut impl rand::Rng) -> Vec<(Setup, u64)> {
    let fixed = [
        // The lesson's full batch: mixed precision alone, or 2 micro-batches.
        (Setup::lesson(2000, 1, FULL, Opt::Sgd), CARD_BYTES),
        // Already fits: nothing to switch on.
        (Setup::lesson(2000, 1, 32, Opt::Sgd), CARD_BYTES),
        // Deep and wide batch: mixed precision and checkpointing together.
        (Setup::lesson(1000, 16, 200_000, Opt::Sgd), 4 * GIB),
        // The model is large: halving "everything" would seem to fit, but Adam's state does
        // not shrink.
        (Setup::lesson(5000, 20, 50_000, Opt::Adam), CARD_BYTES),
        // An odd batch that only accumulation fits: micro-batches of unequal size.
        (Setup::lesson(2000, 1, 999_999, Opt::Adam), 4 * GIB),
        (Setup::lesson(4000, 2, 300_001, Opt::Sgd), 8 * GIB),
    ];
    let mut cases: Vec<(Setup, u64)> = fixed.into_iter().filter(|(s, c)| robust(s, *c)).collect();
    let cards = [
        GIB,
        2 * GIB,
        4 * GIB,
        8 * GIB,
        CARD_BYTES,
        24 * GIB,
        40 * GIB,
        80 * GIB,
    ];
    let want = cases.len() + 6;
    for _ in 0..1000 {
        if cases.len() >= want {
            break;
        }
        let optimizer = if rng.random_bool(0.5) {
            Opt::Adam
        } else {
            Opt::Sgd
        };
        let batch = if rng.random_bool(0.2) {
            FULL
        } else {
            10f64.powf(rng.random_range(3.0..6.0)) as u64
        };
        let setup = Setup::lesson(
            rng.random_range(100..=6000),
            rng.random_range(1..=24),
            batch,
            optimizer,
        );
        let card = cards[rng.random_range(0..cards.len())];
        let plain_fits = planned(&setup.config(), batch, card).is_ok_and(|m| m.fits());
        if !plain_fits && robust(&setup, card) {
            cases.push((setup, card));
        }
    }
    cases
}

/// A case whose verdicts do not hinge on the allocator's rounding or on small differences
/// between a learner's equation and the engine's: the grader's own choice exists within
/// [`super::MAX_STEPS`] micro-batches, and of the settings it could be compared with — any family
/// at any number of micro-batches up to one past it — none requests within 1 % of the card of
/// the 95 % line, and every one below the line fits the card.
fn robust(setup: &Setup, card_bytes: u64) -> bool {
    let Some((chosen, _)) = example(setup, card_bytes) else {
        return false;
    };
    let line = NEEDED_ABOVE * card_bytes as f64;
    let margin = 0.01 * card_bytes as f64;
    let last = (chosen.accumulation_steps + 1).min(setup.batch);
    (1..=last).all(|steps| {
        FAMILIES.iter().all(|&(precision, checkpointing)| {
            let s = Settings::split(setup.batch, steps, precision, checkpointing);
            let Some(peak) = requested(setup, &s) else {
                return false;
            };
            let peak = peak as f64;
            // Settings within 95 % must fit on the card: the allocator rounds every tensor up,
            // and its reserved segments can exceed the tensors (a freed activation's block
            // that small tensors split cannot be reused whole); a learner's equation does not
            // model that.
            (peak - line).abs() >= margin
                && (peak > line || {
                    let (c, r) = run(setup, &s);
                    planned(&c, r, card_bytes).is_ok_and(|m| m.fits())
                })
        })
    })
}
