//! A training step's setup, checked once: a network the engine can build and a batch of at
//! least one row whose bytes 64 bits can count. Whoever takes the settings in — a command
//! line, a grader, the calculator — makes one; the equation ([`StepSetup::estimate`]) and the
//! measurements (`measure::measure_setup`) take it as it is and check nothing again.

use super::{F32, LABEL};
use crate::error::Error;
use crate::mlp::MlpConfig;
use std::num::NonZeroU64;

/// A valid network ([`MlpConfig::validate`]) and a batch of at least one row, small enough
/// that the step's bytes fit in 64 bits with room to add them up.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSetup {
    config: MlpConfig,
    batch: NonZeroU64,
}

impl StepSetup {
    /// `config` at `batch` rows, or why the engine cannot take it.
    pub fn new(config: MlpConfig, batch: NonZeroU64) -> Result<StepSetup, Error> {
        config.validate()?;
        StepSetup::countable(config, batch)
    }

    /// [`StepSetup::new`] for a batch given as a plain number, as the engine's functions that
    /// take one receive it (`estimate`, `measure_step`, …): the engine's one check of a batch
    /// of 0 rows, made after the network's.
    pub fn from_rows(config: &MlpConfig, batch: u64) -> Result<StepSetup, Error> {
        config.validate()?;
        let batch = NonZeroU64::new(batch)
            .ok_or_else(|| Error::Setup("the batch size must be at least 1, got 0".into()))?;
        StepSetup::countable(config.clone(), batch)
    }

    /// Refuses a step whose largest tensors' bytes, times the layers that hold them, come
    /// near what 64 bits can count.
    fn countable(config: MlpConfig, batch: NonZeroU64) -> Result<StepSetup, Error> {
        let widest = config.hidden.max(config.inputs).max(config.classes).max(2);
        let fits = batch
            .get()
            .checked_mul(widest * F32.max(LABEL))
            .and_then(|row| row.checked_mul(config.layers + 4))
            .is_some_and(|total| total < u64::MAX / 4);
        if !fits {
            return Err(Error::Setup(format!(
                "a batch of {batch} rows at width {} needs more bytes than 64 bits can count",
                config.hidden
            )));
        }
        Ok(StepSetup { config, batch })
    }

    pub fn config(&self) -> &MlpConfig {
        &self.config
    }

    pub fn batch(&self) -> NonZeroU64 {
        self.batch
    }

    /// The batch's rows as a plain number.
    pub fn rows(&self) -> u64 {
        self.batch.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups_are_checked_once_in_the_order_the_engine_reports() {
        let rows = |n| NonZeroU64::new(n).unwrap();
        let lesson = MlpConfig::lesson(10);
        assert_eq!(StepSetup::new(lesson.clone(), rows(32)).unwrap().rows(), 32);
        assert_eq!(StepSetup::from_rows(&lesson, 32).unwrap().config(), &lesson);
        let zero = StepSetup::from_rows(&lesson, 0).unwrap_err().to_string();
        assert!(zero.contains("at least 1, got 0"), "{zero}");
        // The network first: a zero width is reported before a zero batch.
        let width = StepSetup::from_rows(&MlpConfig::lesson(0), 0).unwrap_err();
        assert!(width.to_string().contains("width of 0"), "{width}");
        let huge = StepSetup::new(lesson, rows(u64::MAX / 8)).unwrap_err();
        assert!(huge.to_string().contains("64 bits"), "{huge}");
    }
}
