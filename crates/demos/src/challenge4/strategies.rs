//! The demo's measurements: every strategy planned at full size, timed on a sample, and the
//! sources' claims (float32 vs float64, mixed precision) checked against the engine.

mod claims;
mod equivalence;
mod recommended;
mod table;
mod timing;

pub use claims::*;
pub use equivalence::*;
pub use recommended::*;
pub use table::*;
pub use timing::*;

use gpumem::device::{DeviceOptions, Error};
use gpumem::fit::{fewest_micro_batches, measure_update};
use gpumem::lesson::{planning_device, planning_unlimited};
use gpumem::measure::StepMemory;
use gpumem::mlp::{Checkpointing, MlpConfig, Precision, Strategy};

/// `--accumulation`: a number of micro-batches, or the fewest that fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulation {
    Auto,
    Steps(u64),
}

/// Plans updates on the `plan` backing: on the card, and on a card too large to run out.
#[derive(Debug)]
pub struct Planner {
    card: DeviceOptions,
}

impl Planner {
    /// A planner with the allocator's default settings.
    pub fn new(card: u64) -> Planner {
        Planner {
            card: planning_device(card),
        }
    }

    /// A planner whose card has the allocator settings and the memory outside the
    /// allocator of `options` (the demo's flags).
    pub fn with_options(card: u64, options: &DeviceOptions) -> Planner {
        Planner {
            card: DeviceOptions {
                allocator: options.allocator.clone(),
                ..planning_device(card)
            },
        }
    }

    /// The card, as the plan backing's options.
    pub fn card(&self) -> DeviceOptions {
        self.card.clone()
    }

    /// One update on the card, and what it needs (its peaks on a card that never runs out).
    pub fn measure(
        &self,
        config: &MlpConfig,
        rows: u64,
    ) -> Result<(StepMemory, StepMemory), Error> {
        let on_card = measure_update(&self.card(), config, rows, 0)?;
        let needs = if on_card.fits() {
            on_card.clone()
        } else {
            measure_update(&planning_unlimited(), config, rows, 0)?
        };
        Ok((on_card, needs))
    }

    /// The planned peak allocated of one update on a card that never runs out.
    pub fn needs(&self, config: &MlpConfig, rows: u64) -> Result<u64, Error> {
        Ok(measure_update(&planning_unlimited(), config, rows, 0)?.peak_allocated)
    }
}

fn with(base: &MlpConfig, precision: Precision, accumulation: u64, ck: Checkpointing) -> MlpConfig {
    base.clone().with_strategy(Strategy {
        precision,
        accumulation,
        checkpointing: ck,
        ..Default::default()
    })
}

/// The micro-batches the accumulating rows use: `--accumulation K`, or the fewest with which
/// accumulation alone fits (else with everything else on too), at least 2 so that the rows
/// accumulate.
pub fn micro_batches(
    plan: &Planner,
    base: &MlpConfig,
    rows: u64,
    start: Precision,
    accumulation: Accumulation,
    checkpointing: Checkpointing,
) -> Result<u64, Error> {
    if let Accumulation::Steps(k) = accumulation {
        return Ok(k);
    }
    let alone = with(base, start, 1, Checkpointing::Off);
    let all = with(base, Precision::Mixed, 1, checkpointing);
    for config in [alone, all] {
        if let Some((k, _)) = fewest_micro_batches(&plan.card(), &config, rows)? {
            return Ok(k.max(2).min(rows.max(1)));
        }
    }
    Ok(2.min(rows.max(1)))
}
