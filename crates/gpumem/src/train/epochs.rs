//! [`train`]: the loop observed for what a training run reports — loss and accuracy on the
//! training and validation splits, and the allocator's figures, after each epoch.

use super::{EpochTotals, Observer, Progress, Rows, Schedule, run};
use crate::data::{Dataset, Split};
use crate::error::Error;
use crate::mlp::{Mlp, StepOutputs, StepResult};

/// How to train.
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    pub schedule: Schedule,
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

/// Trains `mlp` on `data`. `on_step` is called after every step (drive a progress bar
/// with it). Returns one report per epoch, and any notices about the settings.
pub fn train(
    mlp: &mut Mlp,
    data: &Dataset,
    options: &TrainOptions,
    on_step: impl FnMut(Progress),
) -> Result<(Vec<EpochReport>, Vec<String>), Error> {
    let mut reports = Reports {
        validation: &data.validation,
        eval_batch: options.eval_batch,
        on_step,
        reports: Vec::new(),
    };
    let notices = run(mlp, Rows::Data(data), &options.schedule, &mut reports)?;
    Ok((reports.reports, notices))
}

/// The observer behind [`train`]: evaluates after each epoch and reports.
struct Reports<'a, F> {
    validation: &'a Split,
    eval_batch: u64,
    on_step: F,
    reports: Vec<EpochReport>,
}

impl<F: FnMut(Progress)> Observer for Reports<'_, F> {
    fn after_step(
        &mut self,
        _mlp: &Mlp,
        at: Progress,
        _result: &StepResult,
        _outputs: Option<StepOutputs>,
    ) -> Result<(), Error> {
        (self.on_step)(at);
        Ok(())
    }

    fn after_epoch(&mut self, mlp: &Mlp, totals: &EpochTotals) -> Result<(), Error> {
        let (validation_loss, validation_accuracy) =
            mlp.evaluate(self.validation, self.eval_batch)?;
        let device = mlp.device();
        self.reports.push(EpochReport {
            epoch: totals.epoch,
            steps: totals.steps,
            train_loss: totals.loss().unwrap_or(0.0),
            train_accuracy: totals.accuracy(),
            validation_loss,
            validation_accuracy,
            allocated: device.memory_allocated(),
            reserved: device.memory_reserved(),
            peak_allocated: device.max_memory_allocated(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;
    use crate::mlp::MlpConfig;
    use crate::train::BatchSize;

    fn options(epochs: u64) -> TrainOptions {
        TrainOptions {
            schedule: Schedule {
                epochs,
                batch: BatchSize::Rows(std::num::NonZeroU64::new(4).unwrap()),
                seed: 0,
                max_steps_per_epoch: None,
            },
            eval_batch: 10,
        }
    }

    #[test]
    fn plan_cannot_train() {
        let dev = Device::plan(1 << 30);
        let mut m = Mlp::new(&dev, &MlpConfig::lesson(8), 0).unwrap();
        let data = Dataset::generate(10, 0);
        let e = train(&mut m, &data, &options(1), |_| {}).unwrap_err();
        assert!(matches!(e, Error::Plan(_)), "{e}");
    }

    #[test]
    fn reports_every_epoch_and_every_step() {
        let dev = Device::cpu(64 << 20);
        let mut m = Mlp::new(&dev, &MlpConfig::lesson(8), 0).unwrap();
        let data = Dataset::generate(10, 0);
        let mut steps = Vec::new();
        let (reports, notices) = train(&mut m, &data, &options(2), |p| steps.push(p)).unwrap();
        assert!(notices.is_empty());
        assert_eq!(reports.iter().map(|r| r.epoch).collect::<Vec<_>>(), [1, 2]);
        // 10 rows in batches of 4: 4, 4, 2.
        assert_eq!(
            steps
                .iter()
                .map(|p| (p.epoch, p.step, p.rows))
                .collect::<Vec<_>>(),
            [
                (1, 1, 4),
                (1, 2, 4),
                (1, 3, 2),
                (2, 1, 4),
                (2, 2, 4),
                (2, 3, 2)
            ]
        );
        for r in &reports {
            assert_eq!(r.steps, 3);
            assert!(r.train_loss.is_finite() && r.train_loss > 0.0, "{r:?}");
            assert!((0.0..=1.0).contains(&r.validation_accuracy), "{r:?}");
            // Between epochs only the model is alive.
            assert_eq!(r.allocated, dev.memory_allocated());
        }
    }
}
