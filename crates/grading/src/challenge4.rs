//! Challenge 4: fitting more on the card.
//!
//! The learner writes the memory equation with the strategies in it (`peak_bytes`), then
//! chooses settings — precision, micro-batch size and accumulation steps, checkpoint spacing —
//! that make a setup fit a card while keeping its batch (`choose_settings`). Their equation is
//! compared with the engine's planned peak, in parts ([`equation`]): the **core** — float32,
//! the whole batch or micro-batches — then four **going-further** parts (float64,
//! checkpointing, mixed precision, the strategies together). The core, with `loss_scale`, is
//! what a learner's `cargo test` asks for ([`Report::verdict`]); the going-further parts and
//! `choose_settings` (whose cheapest order tries mixed precision and checkpointing, so it needs
//! those parts) are graded and reported after it, as optional. Their choice is run through the
//! engine (the `plan` backing) and judged by three rules:
//!
//! 1. **fits** — one update with these settings, planned on the card, does not run out of
//!    memory;
//! 2. **same effective batch** — `accumulation_steps` micro-batches of `micro_batch` rows are
//!    the engine's split of the batch: `micro_batch = ⌈batch / accumulation_steps⌉`, with
//!    `1 ≤ accumulation_steps ≤ batch`;
//! 3. **nothing needless** — every strategy switched on is needed. The grader switches each
//!    off in turn, leaving the rest as chosen — precision back to float32, checkpointing off,
//!    one micro-batch fewer — and plans again; if the step then needs at most 95 % of the card
//!    (its planned peak of requested bytes, before the allocator's rounding — what a learner's
//!    equation counts) **and**, planned on the card with the caching allocator, it fits,
//!    that strategy was not needed. (95 %, not 100 %: a safe choice keeps about 5 % of the
//!    card for the allocator's rounding, and is not punished for it. Planned on the card: a
//!    cheaper setting under the line can still run out when the cache fragments — Challenge
//!    1's full batch in two float32 micro-batches does — and a choice that avoids it is not
//!    needless.)
//!
//! Last, `loss_scale`: the factor each micro-batch's loss is scaled by under gradient
//! accumulation, compared with the engine's (see [`loss_scale`]).

use crate::{Check, Outcome};
use crate::{NoValue, Report, Setup};
use gpumem::estimate::requested_peak;
use gpumem::fit::{checkpointing_has_effect, measure_update};
use gpumem::lesson::planning_device;
use gpumem::measure::StepMemory;
use gpumem::mlp::{MlpConfig, Strategy};

mod cases;
mod choice;
pub mod equation;
mod loss_scale;

pub use cases::{NamedCase, named_choice_cases, survives};
use cases::{choice_cases, equation_cases};
use choice::grade_choice;
pub use equation::{CHECKPOINTING, CORE, FLOAT64, MIXED, PARTS, TOGETHER};
use rand::SeedableRng;
use std::fmt;

pub use gpumem::mlp::{Checkpointing, Precision};
pub use loss_scale::LOSS_SCALE;

// ANCHOR: settings
/// How one update is run: the learner's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `Float32` (nothing saved), `Mixed` (autocast: activations in float16; weights,
    /// gradients and optimizer state stay float32, with float16 copies of the weights) or
    /// `Float64` (every value but the labels 8 bytes).
    pub precision: Precision,
    /// Rows in each micro-batch (the first ones, when the batch does not divide evenly).
    pub micro_batch: u64,
    /// Micro-batches per optimizer update; 1 means no gradient accumulation.
    pub accumulation_steps: u64,
    /// `Off`, `Every(k)` hidden layers per segment, or `Sqrt` (segments of ⌈√layers⌉): every
    /// segment but the last is checkpointed (`Each(k)`: the last too).
    pub checkpointing: Checkpointing,
}
// ANCHOR_END: settings

impl Settings {
    /// No strategy: float32, the whole batch at once, every activation kept.
    pub fn plain(batch: u64) -> Settings {
        Settings {
            precision: Precision::Float32,
            micro_batch: batch,
            accumulation_steps: 1,
            checkpointing: Checkpointing::Off,
        }
    }

    /// `batch` rows in `steps` micro-batches the way the engine splits them, at `precision`
    /// with `checkpointing`.
    pub fn split(
        batch: u64,
        steps: u64,
        precision: Precision,
        checkpointing: Checkpointing,
    ) -> Settings {
        Settings {
            precision,
            micro_batch: batch.div_ceil(steps),
            accumulation_steps: steps,
            checkpointing,
        }
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let precision = match self.precision {
            Precision::Float32 => "float32",
            Precision::Mixed => "mixed precision",
            Precision::Float64 => "float64",
        };
        let k = self.accumulation_steps;
        write!(
            f,
            "{precision}, {k} micro-batch{} of {} rows, ",
            if k == 1 { "" } else { "es" },
            self.micro_batch
        )?;
        match self.checkpointing {
            Checkpointing::Off => write!(f, "no checkpointing"),
            Checkpointing::Every(g) => write!(f, "checkpoints every {g} layers"),
            Checkpointing::Each(g) => write!(f, "checkpoints every {g} layers, the last too"),
            Checkpointing::Sqrt => write!(f, "checkpoints every ⌈√layers⌉ layers"),
        }
    }
}

/// The learner's functions.
#[derive(Debug, Clone, Copy)]
pub struct Answers {
    pub peak_bytes: fn(setup: Setup, settings: Settings) -> u64,
    pub choose_settings: fn(setup: Setup, card_bytes: u64) -> Settings,
    pub loss_scale: fn(batch: u64, accumulation_steps: u64, index: u64) -> f64,
}

/// `Answers` from a module that defines the three functions.
#[macro_export]
#[doc(hidden)]
macro_rules! challenge4_answers_of {
    ($($m:ident)::+) => {
        $crate::challenge4::Answers {
            peak_bytes: $($m)::+::peak_bytes,
            choose_settings: $($m)::+::choose_settings,
            loss_scale: $($m)::+::loss_scale,
        }
    };
}

#[doc(inline)]
pub use crate::challenge4_answers_of as answers_of;

const GIB: u64 = 1 << 30;

/// How far `peak_bytes` may be from the engine's peak (its rounding-free part) and pass.
pub const TOLERANCE: f64 = 0.01;

/// The share of the card a strategy must be needed for (see the module docs).
pub const NEEDED_ABOVE: f64 = 0.95;

/// The check groups of `choose_settings`, as the report names them.
pub const FITS: &str = "choose_settings: fits";
pub const SAME_BATCH: &str = "choose_settings: same effective batch";
pub const NOTHING_NEEDLESS: &str = "choose_settings: nothing needless";

/// The report's going-further groups: every part of `peak_bytes` but the core, and the three
/// rules of `choose_settings`.
pub const GOING_FURTHER: [&str; 7] = [
    FLOAT64,
    CHECKPOINTING,
    MIXED,
    TOGETHER,
    FITS,
    SAME_BATCH,
    NOTHING_NEEDLESS,
];

/// The largest number of micro-batches the grader's own cases need.
const MAX_STEPS: u64 = 32;

/// The families of settings in the order "cheapest" tries them at each number of
/// micro-batches: no recomputation before recomputation, float32 before mixed precision.
const FAMILIES: [(Precision, Checkpointing); 4] = [
    (Precision::Float32, Checkpointing::Off),
    (Precision::Mixed, Checkpointing::Off),
    (Precision::Float32, Checkpointing::Sqrt),
    (Precision::Mixed, Checkpointing::Sqrt),
];

/// The engine's configuration and batch for `settings`: the learner's batch split as they
/// say when the split is the engine's, else `micro_batch × accumulation_steps` rows.
fn run(setup: &Setup, settings: &Settings) -> (MlpConfig, u64) {
    let config = setup.config().with_strategy(Strategy {
        precision: settings.precision,
        accumulation: settings.accumulation_steps,
        checkpointing: settings.checkpointing,
        ..Default::default()
    });
    let rows = if same_batch(setup.batch, settings) {
        setup.batch
    } else {
        settings
            .micro_batch
            .saturating_mul(settings.accumulation_steps)
    };
    (config, rows)
}

/// Rule 2: the micro-batches are the engine's split of `batch`.
fn same_batch(batch: u64, s: &Settings) -> bool {
    (1..=batch).contains(&s.accumulation_steps)
        && s.micro_batch == batch.div_ceil(s.accumulation_steps)
}

/// One update planned on a card of `capacity` bytes.
fn planned(config: &MlpConfig, rows: u64, capacity: u64) -> Result<StepMemory, String> {
    measure_update(&planning_device(capacity), config, rows, 0).map_err(|e| e.to_string())
}

/// The peak bytes one update of `setup` with `settings` requests, before the allocator's
/// rounding: the memory equation's [`requested_peak`], which equals the engine's planned
/// `peak_requested` on every setup (and takes no planning, so the grader can try many).
fn requested(setup: &Setup, settings: &Settings) -> Option<u64> {
    let (config, rows) = run(setup, settings);
    requested_peak(&config, rows).ok()
}

/// The grader's own settings for `setup` on `card`, planned by the engine, by the rules a
/// learner is given: the fewest micro-batches, then no recomputation, then float32, at most
/// 95 % of the card. `None` beyond [`MAX_STEPS`] micro-batches.
pub fn example(setup: &Setup, card_bytes: u64) -> Option<(Settings, u64)> {
    let budget = (NEEDED_ABOVE * card_bytes as f64) as u64;
    for steps in 1..=MAX_STEPS.min(setup.batch) {
        for (precision, checkpointing) in FAMILIES {
            if checkpointing != Checkpointing::Off
                && !checkpointing_has_effect(checkpointing, setup.layers)
            {
                continue;
            }
            let s = Settings::split(setup.batch, steps, precision, checkpointing);
            let peak = requested(setup, &s)?;
            if peak <= budget {
                return Some((s, peak));
            }
        }
    }
    None
}

/// Grades `answers` on fixed setups and on random ones drawn from `seed`.
pub fn grade(answers: &Answers, seed: u64) -> Report {
    let mut report = Report::new("Challenge 4 (fitting more)");
    report.going_further = GOING_FURTHER.to_vec();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let equations = equation_cases(&mut rng);
    let choices = choice_cases(&mut rng);
    let splits = loss_scale::cases(&mut rng);
    // The core first: the float32 equation, then loss_scale.
    for (setup, settings, term) in equations
        .iter()
        .filter(|(_, s, _)| equation::part_of(s) == CORE)
    {
        equation::grade(&mut report, answers, *setup, *settings, *term);
    }
    for (batch, steps) in splits {
        loss_scale::grade(&mut report, answers, batch, steps);
    }
    // Going further: the equation's other parts in the book's order, then the choice.
    for part in &PARTS[1..] {
        for (setup, settings, term) in equations
            .iter()
            .filter(|(_, s, _)| equation::part_of(s) == *part)
        {
            equation::grade(&mut report, answers, *setup, *settings, *term);
        }
    }
    for (setup, card_bytes) in choices {
        grade_choice(&mut report, answers, setup, card_bytes);
    }
    report
}

fn percent(part: u64, whole: u64) -> String {
    let p = 100.0 * part as f64 / whole.max(1) as f64;
    if p < 0.1 {
        "under 0.1 %".to_string()
    } else {
        format!("{p:.1} %")
    }
}

fn push(
    report: &mut Report,
    function: &'static str,
    case: &str,
    expected: String,
    got: Result<(String, bool), NoValue>,
    hint: &str,
) {
    let (got, outcome) = match got {
        Ok((text, true)) => (text, Outcome::Pass),
        Ok((text, false)) => (text, Outcome::Fail),
        Err(no) => (no.got(), Outcome::of(no)),
    };
    report.checks.push(Check {
        function,
        case: case.to_string(),
        expected,
        got,
        hint: hint.to_string(),
        outcome,
    });
}
