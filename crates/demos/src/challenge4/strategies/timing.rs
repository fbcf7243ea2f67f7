//! Timing each strategy: training a few epochs of a sample on a backing that executes.

use anyhow::Context;
use gpumem::data::{Dataset, epoch_batches, rng};
use gpumem::device::{DeviceOptions, Error};
use gpumem::mlp::{Batch, Mlp, MlpConfig, Strategy};
use gpumem::size::format_bytes;
use gpumem::train::BatchSize;
use gpumem::{Backend, Device};
use serde::Serialize;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

/// What a timing run measured, or why it could not run.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub backend: Backend,
    /// Mean wall time of an epoch's training steps (not the evaluation).
    pub seconds_per_epoch: Option<f64>,
    /// `seconds_per_epoch` over the plain run's.
    pub relative_to_none: Option<f64>,
    /// Mean loss over the last epoch's training rows.
    pub train_loss: Option<f32>,
    pub validation_loss: Option<f32>,
    pub validation_accuracy: Option<f32>,
    /// Hidden layers recomputed over the whole run (checkpointing), as the step counted them.
    pub recomputed_layers: u64,
    /// Why the run did not happen (e.g. no float16 kernels on this backing).
    pub not_measured: Option<String>,
}

impl Timing {
    fn not_measured(backend: Backend, why: String) -> Timing {
        Timing {
            backend,
            seconds_per_epoch: None,
            relative_to_none: None,
            train_loss: None,
            validation_loss: None,
            validation_accuracy: None,
            recomputed_layers: 0,
            not_measured: Some(why),
        }
    }
}

/// The sample the timing runs train on.
#[derive(Debug)]
pub struct Sample {
    pub rows: NonZeroU64,
    pub batch: BatchSize,
    pub epochs: u64,
    seed: u64,
    data: Dataset,
}

impl Sample {
    pub fn new(rows: NonZeroU64, batch: BatchSize, epochs: u64, seed: u64) -> Sample {
        Sample {
            rows,
            batch,
            epochs,
            seed,
            data: Dataset::generate(rows.get(), seed),
        }
    }

    /// Rows per batch on the sample (the whole sample for `full`).
    pub fn batch_rows(&self) -> u64 {
        self.batch.resolve(self.rows).0.get()
    }

    /// Trains `strategy` on the sample on a fresh device of `options` and times it.
    pub fn time(
        &self,
        options: &DeviceOptions,
        base: &MlpConfig,
        strategy: Strategy,
    ) -> anyhow::Result<Timing> {
        let backend = options.backend;
        match self.train(options, &base.clone().with_strategy(strategy)) {
            Ok(t) => Ok(t),
            Err(Error::OutOfMemory(o)) => Ok(Timing::not_measured(
                backend,
                format!(
                    "out of memory even at the sample size (tried to allocate {})",
                    format_bytes(o.tried)
                ),
            )),
            // An adapter without SHADER_F64 cannot run float64: say so in the row rather
            // than failing the demo.
            Err(e @ Error::Unsupported(_)) => Ok(Timing::not_measured(backend, e.to_string())),
            Err(e) => Err(e).with_context(|| format!("timing {strategy:?} on {backend}")),
        }
    }

    /// One untimed step of the plain setup (errors are left to the timed runs to report).
    pub fn warm_up(&self, options: &DeviceOptions, base: &MlpConfig) {
        let indices: Vec<usize> = (0..self.batch_rows() as usize).collect();
        let part = self.data.train.gather(&indices);
        let _ = Device::new(options)
            .and_then(|d| Mlp::new(&d, base, self.seed))
            .and_then(|mut m| m.train_step(Batch::Data(&part)));
    }

    fn train(&self, options: &DeviceOptions, config: &MlpConfig) -> Result<Timing, Error> {
        let device = Device::new(options)?;
        let mut mlp = Mlp::new(&device, config, self.seed)?;
        let mut shuffle = rng(self.seed);
        let (mut busy, mut loss, mut seen, mut recomputed) = (Duration::ZERO, 0f64, 0u64, 0u64);
        for _ in 0..self.epochs {
            (loss, seen) = (0.0, 0);
            let batches = epoch_batches(
                self.rows.get() as usize,
                self.batch_rows() as usize,
                &mut shuffle,
            );
            for indices in batches {
                let part = self.data.train.gather(&indices);
                let start = Instant::now();
                let r = mlp.train_step(Batch::Data(&part))?;
                busy += start.elapsed();
                loss += f64::from(r.loss.unwrap_or(f32::NAN)) * r.rows as f64;
                seen += r.rows;
                recomputed += r.recomputed_layers;
            }
        }
        let (validation_loss, validation_accuracy) = if self.data.validation.is_empty() {
            (None, None)
        } else {
            let (l, a) = mlp.evaluate(&self.data.validation, 4096)?;
            (Some(l), Some(a))
        };
        Ok(Timing {
            backend: options.backend,
            seconds_per_epoch: Some(busy.as_secs_f64() / self.epochs as f64),
            relative_to_none: None,
            train_loss: Some((loss / seen.max(1) as f64) as f32),
            validation_loss,
            validation_accuracy,
            recomputed_layers: recomputed,
            not_measured: None,
        })
    }
}
