//! The training loop: shuffled mini-batches, epochs, loss and accuracy per epoch, and the
//! allocator's figures after each epoch.

use crate::data::{Dataset, epoch_batches, rng};
use crate::error::Error;
use crate::mlp::{Batch, Mlp};
use std::fmt;
use std::str::FromStr;

/// Rows per mini-batch: a number, or the whole training set (`full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchSize {
    Rows(u64),
    Full,
}

impl BatchSize {
    /// The rows per batch for a training set of `available` rows, and a notice when the
    /// requested size was larger than the set (it is then clamped to the whole set).
    pub fn resolve(self, available: u64) -> (u64, Option<String>) {
        match self {
            BatchSize::Full => (available, None),
            BatchSize::Rows(n) if n > available => (
                available,
                Some(format!(
                    "batch size {n} is larger than the training set ({available} rows); using the whole set as one batch"
                )),
            ),
            BatchSize::Rows(n) => (n, None),
        }
    }
}

impl fmt::Display for BatchSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchSize::Rows(n) => write!(f, "{n}"),
            BatchSize::Full => f.pad("full"),
        }
    }
}

impl FromStr for BatchSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("full") {
            return Ok(BatchSize::Full);
        }
        match t.parse::<u64>() {
            Ok(0) => Err("the batch size must be at least 1 (or `full`), got 0".into()),
            Ok(n) => Ok(BatchSize::Rows(n)),
            Err(_) if t.starts_with('-') => {
                Err(format!("the batch size cannot be negative, got `{t}`"))
            }
            Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
                Err(format!("the batch size `{t}` is too large to count"))
            }
            Err(_) => Err(format!(
                "`{t}` is not a batch size: expected a positive whole number or `full`"
            )),
        }
    }
}

/// How to train.
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    pub epochs: u64,
    pub batch: BatchSize,
    /// Shuffling seed.
    pub seed: u64,
    /// Stop each epoch after this many steps (for quick demonstrations).
    pub max_steps_per_epoch: Option<u64>,
    /// Rows per batch when evaluating on the validation split.
    pub eval_batch: u64,
}

/// One epoch's results.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EpochReport {
    pub epoch: u64,
    pub steps: u64,
    pub train_loss: f32,
    pub train_accuracy: f32,
    pub validation_loss: f32,
    pub validation_accuracy: f32,
    /// `memory_allocated()` at the end of the epoch.
    pub allocated: u64,
    /// `memory_reserved()` at the end of the epoch.
    pub reserved: u64,
    /// `max_memory_allocated()` since the start of training.
    pub peak_allocated: u64,
}

/// Progress after each step, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub epoch: u64,
    pub step: u64,
    pub steps_in_epoch: u64,
}

/// Trains `mlp` on `data`. `on_step` is called after every step (drive a progress bar
/// with it). Returns one report per epoch, and any notices about the settings.
pub fn train(
    mlp: &mut Mlp,
    data: &Dataset,
    options: &TrainOptions,
    mut on_step: impl FnMut(Progress),
) -> Result<(Vec<EpochReport>, Vec<String>), Error> {
    if !mlp.device().info().executes {
        return Err(Error::Plan(
            "training needs a backing that runs kernels (cpu or wgpu); plan only plans steps"
                .into(),
        ));
    }
    let rows = data.train.len() as u64;
    if rows == 0 {
        return Err(Error::Setup("the training set is empty".into()));
    }
    let (batch, notice) = options.batch.resolve(rows);
    let mut shuffle = rng(options.seed);
    let mut reports = Vec::new();
    for epoch in 1..=options.epochs {
        let mut batches = epoch_batches(rows as usize, batch as usize, &mut shuffle);
        if let Some(max) = options.max_steps_per_epoch {
            batches.truncate(max as usize);
        }
        let steps = batches.len() as u64;
        let (mut loss_sum, mut correct, mut seen) = (0f64, 0u64, 0u64);
        for (step, indices) in batches.iter().enumerate() {
            let part = data.train.gather(indices);
            let r = mlp.train_step(Batch::Data(&part))?;
            loss_sum += f64::from(r.loss.unwrap_or(f32::NAN)) * r.rows as f64;
            correct += r.correct.unwrap_or(0);
            seen += r.rows;
            on_step(Progress {
                epoch,
                step: step as u64 + 1,
                steps_in_epoch: steps,
            });
        }
        let (validation_loss, validation_accuracy) =
            mlp.evaluate(&data.validation, options.eval_batch)?;
        let device = mlp.device();
        reports.push(EpochReport {
            epoch,
            steps,
            train_loss: (loss_sum / seen.max(1) as f64) as f32,
            train_accuracy: correct as f32 / seen.max(1) as f32,
            validation_loss,
            validation_accuracy,
            allocated: device.memory_allocated(),
            reserved: device.memory_reserved(),
            peak_allocated: device.max_memory_allocated(),
        });
    }
    Ok((reports, notice.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_parse_with_clear_errors() {
        assert_eq!("32".parse(), Ok(BatchSize::Rows(32)));
        assert_eq!("full".parse(), Ok(BatchSize::Full));
        assert_eq!(" FULL ".parse(), Ok(BatchSize::Full));
        for (bad, text) in [
            ("0", "at least 1"),
            ("-1", "negative"),
            ("abc", "not a batch size"),
            ("", "not a batch size"),
            ("99999999999999999999999", "too large"),
        ] {
            let e = bad.parse::<BatchSize>().unwrap_err();
            assert!(e.contains(text), "{bad}: {e}");
        }
    }

    #[test]
    fn oversized_batches_are_clamped_with_a_notice() {
        assert_eq!(BatchSize::Rows(10).resolve(100), (10, None));
        assert_eq!(BatchSize::Full.resolve(100), (100, None));
        let (rows, notice) = BatchSize::Rows(500).resolve(100);
        assert_eq!(rows, 100);
        assert!(notice.unwrap().contains("larger than the training set"));
    }

    #[test]
    fn plan_cannot_train() {
        let dev = crate::Device::plan(1 << 30);
        let mut m = Mlp::new(&dev, &crate::mlp::MlpConfig::lesson(8), 0).unwrap();
        let data = Dataset::generate(10, 0);
        let opts = TrainOptions {
            epochs: 1,
            batch: BatchSize::Rows(4),
            seed: 0,
            max_steps_per_epoch: None,
            eval_batch: 10,
        };
        assert!(train(&mut m, &data, &opts, |_| {}).is_err());
    }
}
