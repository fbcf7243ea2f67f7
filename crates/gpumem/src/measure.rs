//! Measuring a setup: build the model on a fresh device, run one training step, and read
//! the allocator's statistics — or the out-of-memory error, if it did not fit.

use crate::alloc::OutOfMemory;
use crate::data::Dataset;
use crate::device::{Device, DeviceOptions, Error};
use crate::mlp::{Batch, Mlp, MlpConfig};

/// What one step on a fresh device used.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepMemory {
    /// `memory_allocated()` once the model (parameters, gradients, state) exists.
    pub model_allocated: u64,
    /// `max_memory_allocated()` after the step (or up to the failure).
    pub peak_allocated: u64,
    /// `max_memory_reserved()` after the step (or up to the failure).
    pub peak_reserved: u64,
    /// Segment allocations (device calls) made.
    pub device_allocations: u64,
    /// The out-of-memory error, if the setup did not fit.
    pub oom: Option<OutOfMemory>,
    /// Where the failure happened: `"model"` or `"step"`.
    pub failed_in: Option<&'static str>,
    /// Whether kernels ran (false on `plan`).
    pub executed: bool,
    pub loss: Option<f32>,
}

impl StepMemory {
    pub fn fits(&self) -> bool {
        self.oom.is_none()
    }
}

/// Builds `config` on a fresh device opened with `options` and runs one step of `batch`
/// rows. Out-of-memory is a result (`fits() == false`); any other failure is an error.
pub fn measure_step(
    options: &DeviceOptions,
    config: &MlpConfig,
    batch: u64,
    seed: u64,
) -> Result<StepMemory, Error> {
    measure_step_on(&Device::new(options)?, config, batch, seed)
}

/// [`measure_step`] on a device the caller opened (it should be fresh).
pub fn measure_step_on(
    device: &Device,
    config: &MlpConfig,
    batch: u64,
    seed: u64,
) -> Result<StepMemory, Error> {
    crate::estimate::estimate(config, batch)?;
    let executed = device.info().executes;
    let snapshot = |oom: Option<OutOfMemory>, failed_in, model_allocated, loss| {
        let stats = device.memory_stats();
        StepMemory {
            model_allocated,
            peak_allocated: stats.allocated_bytes.all.peak,
            peak_reserved: stats.reserved_bytes.all.peak,
            device_allocations: stats.num_device_alloc,
            oom,
            failed_in,
            executed,
            loss,
        }
    };
    let mut mlp = match Mlp::new(device, config, seed) {
        Ok(m) => m,
        Err(Error::OutOfMemory(o)) => {
            return Ok(snapshot(
                Some(*o),
                Some("model"),
                device.memory_allocated(),
                None,
            ));
        }
        Err(e) => return Err(e),
    };
    let model_allocated = device.memory_allocated();
    let data = executed.then(|| Dataset::generate(batch, seed).train);
    let rows = match &data {
        Some(split) => Batch::Data(split),
        None => Batch::Planned(batch),
    };
    match mlp.train_step(rows) {
        Ok(r) => Ok(snapshot(None, None, model_allocated, r.loss)),
        Err(Error::OutOfMemory(o)) => Ok(snapshot(Some(*o), Some("step"), model_allocated, None)),
        Err(e) => Err(e),
    }
}
