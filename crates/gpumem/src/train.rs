//! The training loop: epochs of shuffled mini-batches through [`Mlp::train_step`], and an
//! [`Observer`] that sees every epoch and step. What a loop does besides stepping — report
//! losses ([`train`]), trace the allocator, keep outputs alive, empty the cache — is an
//! observer's, so there is one loop and every allocation happens in its order.

mod batch_size;
mod epochs;

pub use batch_size::BatchSize;
pub use epochs::{EpochReport, TrainOptions, train};

use crate::data::{Dataset, Split, epoch_batches, rng};
use crate::error::Error;
use crate::mlp::{Batch, Mlp, StepOutputs, StepResult};
use std::num::NonZeroU64;

/// Where a loop's rows come from.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    /// The training split of a data set, shuffled into batches each epoch: kernels run, so
    /// the device must execute (cpu or wgpu).
    Data(&'a Dataset),
    /// Only a number of rows, batched in order: for the `plan` backing, which runs no
    /// kernels and needs no data.
    Planned(u64),
}

impl Rows<'_> {
    fn available(&self) -> u64 {
        match self {
            Rows::Data(d) => d.train.len() as u64,
            Rows::Planned(n) => *n,
        }
    }
}

/// How long and in what batches to train.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub epochs: u64,
    pub batch: BatchSize,
    /// Shuffling seed.
    pub seed: u64,
    /// Stop each epoch after this many steps (for quick demonstrations).
    pub max_steps_per_epoch: Option<u64>,
}

/// Where the loop is: the step about to run or just run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub epoch: u64,
    /// Step within the epoch, from 1.
    pub step: u64,
    pub steps_in_epoch: u64,
    /// Rows of this step's batch.
    pub rows: u64,
}

/// One epoch's training figures, summed over its steps.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EpochTotals {
    pub epoch: u64,
    pub steps: u64,
    /// Rows trained on.
    pub rows: u64,
    /// Rows classified correctly (0 when no kernel ran).
    pub correct: u64,
    /// Σ loss × rows over the steps that measured a loss, and their rows.
    loss_sum: f64,
    loss_rows: u64,
}

impl EpochTotals {
    fn add(&mut self, r: &StepResult) {
        if let Some(loss) = r.loss {
            self.loss_sum += f64::from(loss) * r.rows as f64;
            self.loss_rows += r.rows;
        }
        self.correct += r.correct.unwrap_or(0);
        self.rows += r.rows;
    }

    /// Mean training loss over the epoch's rows (`None` when no kernel ran).
    pub fn loss(&self) -> Option<f32> {
        (self.loss_rows > 0).then(|| (self.loss_sum / self.loss_rows as f64) as f32)
    }

    /// The share of rows classified correctly.
    pub fn accuracy(&self) -> f32 {
        self.correct as f32 / self.rows.max(1) as f32
    }
}

/// What a loop does around its steps. Every hook may fail, which ends the loop with that
/// error; by default each does nothing.
pub trait Observer {
    /// Whether each step hands its outputs (logits and per-row losses, on the device) to
    /// [`Observer::after_step`]. A step that hands them back allocates and frees in another
    /// order than one that does not, and they hold memory until the observer drops them.
    fn keeps_outputs(&self) -> bool {
        false
    }

    /// Before epoch `epoch` (from 1) is batched.
    fn before_epoch(&mut self, _mlp: &Mlp, _epoch: u64) -> Result<(), Error> {
        Ok(())
    }

    /// Before the step `at` runs.
    fn before_step(&mut self, _mlp: &Mlp, _at: Progress) -> Result<(), Error> {
        Ok(())
    }

    /// After the step `at` ran, with its outputs if [`Observer::keeps_outputs`].
    fn after_step(
        &mut self,
        _mlp: &Mlp,
        _at: Progress,
        _result: &StepResult,
        _outputs: Option<StepOutputs>,
    ) -> Result<(), Error> {
        Ok(())
    }

    /// After the last step of an epoch.
    fn after_epoch(&mut self, _mlp: &Mlp, _totals: &EpochTotals) -> Result<(), Error> {
        Ok(())
    }
}

/// One batch of an epoch: rows of a split (by index), or only their count.
enum Planned<'a> {
    Rows(&'a Split, Vec<usize>),
    Count(u64),
}

/// The batches of one epoch: shuffled rows of the data, or counts in order; the last batch
/// is short when the rows do not divide evenly.
fn epoch_plan<'a>(
    rows: Rows<'a>,
    batch: u64,
    shuffle: &mut rand_chacha::ChaCha8Rng,
) -> Vec<Planned<'a>> {
    match rows {
        Rows::Data(d) => epoch_batches(d.train.len(), batch as usize, shuffle)
            .into_iter()
            .map(|indices| Planned::Rows(&d.train, indices))
            .collect(),
        Rows::Planned(n) => (0..n.div_ceil(batch))
            .map(|i| Planned::Count(batch.min(n - i * batch)))
            .collect(),
    }
}

/// Refuses rows the device cannot train on and an empty set; returns the set's rows. (The
/// batch needs no check: [`BatchSize`] holds at least one row.)
fn check(mlp: &Mlp, rows: Rows<'_>) -> Result<NonZeroU64, Error> {
    let executes = mlp.device().info().executes;
    match rows {
        Rows::Data(_) if !executes => {
            return Err(Error::Plan(
                "training needs a backing that runs kernels (cpu or wgpu); plan only plans steps"
                    .into(),
            ));
        }
        Rows::Planned(_) if executes => {
            return Err(Error::Plan(
                "rows without data are for the plan backing; kernels need data to train on".into(),
            ));
        }
        _ => {}
    }
    NonZeroU64::new(rows.available())
        .ok_or_else(|| Error::Setup("the training set is empty".into()))
}

/// Trains `mlp` on `rows` as `schedule` says, calling `observer` around every epoch and
/// step. Returns notices about the settings (a batch larger than the set is clamped). The
/// first error ends the loop — out of memory included, at the step the observer last saw.
pub fn run(
    mlp: &mut Mlp,
    rows: Rows<'_>,
    schedule: &Schedule,
    observer: &mut impl Observer,
) -> Result<Vec<String>, Error> {
    let (batch, notice) = schedule.batch.resolve(check(mlp, rows)?);
    let batch = batch.get();
    let mut shuffle = rng(schedule.seed);
    for epoch in 1..=schedule.epochs {
        observer.before_epoch(mlp, epoch)?;
        let mut batches = epoch_plan(rows, batch, &mut shuffle);
        if let Some(max) = schedule.max_steps_per_epoch {
            batches.truncate(max as usize);
        }
        let mut totals = EpochTotals {
            epoch,
            steps: batches.len() as u64,
            ..Default::default()
        };
        for (i, planned) in batches.iter().enumerate() {
            let gathered;
            let batch = match planned {
                Planned::Rows(split, indices) => {
                    gathered = split.gather(indices);
                    Batch::Data(&gathered)
                }
                Planned::Count(n) => Batch::Planned(*n),
            };
            let at = Progress {
                epoch,
                step: i as u64 + 1,
                steps_in_epoch: totals.steps,
                rows: batch.rows(),
            };
            observer.before_step(mlp, at)?;
            let (result, outputs) = if observer.keeps_outputs() {
                let (r, o) = mlp.train_step_with_outputs(batch)?;
                (r, Some(o))
            } else {
                (mlp.train_step(batch)?, None)
            };
            totals.add(&result);
            observer.after_step(mlp, at, &result, outputs)?;
        }
        observer.after_epoch(mlp, &totals)?;
    }
    Ok(notice.into_iter().collect())
}

#[cfg(test)]
mod tests;
