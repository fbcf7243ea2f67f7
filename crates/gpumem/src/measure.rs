//! Measuring a setup: build the model on a fresh device, run two training steps (the second
//! is the steady state: optimizer state exists, and the first step's `y_pred` and `loss` are
//! alive until the second rebinds them), and read the allocator's statistics — or the
//! out-of-memory error, if it did not fit.

pub use crate::search::largest_where;

use crate::alloc::{OutOfMemory, Trace};
use crate::data::Dataset;
use crate::device::{Device, DeviceOptions};
use crate::error::Error;
use crate::estimate::StepSetup;
use crate::mlp::{Batch, Mlp, MlpConfig};

/// What one step on a fresh device used.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StepMemory {
    /// `memory_allocated()` once the model (parameters, gradients, state) exists.
    pub model_allocated: u64,
    /// `max_memory_allocated()` after two steps (or up to the failure).
    pub peak_allocated: u64,
    /// `max_memory_reserved()` after the step (or up to the failure).
    pub peak_reserved: u64,
    /// Peak of the bytes callers asked for, before any rounding (the pure equation).
    pub peak_requested: u64,
    /// Segment allocations (device calls) made.
    pub device_allocations: u64,
    /// The out-of-memory error, if the setup did not fit.
    pub oom: Option<OutOfMemory>,
    /// Where the failure happened.
    pub failed_in: Option<Phase>,
    /// Whether kernels ran (false on `plan`).
    pub executed: bool,
    pub loss: Option<f32>,
}

/// Where a measured setup ran out of memory: building the model, or a pass of the step.
pub use crate::mlp::Pass as Phase;

impl StepMemory {
    pub fn fits(&self) -> bool {
        self.oom.is_none()
    }
}

/// Steps a measurement runs: the second is the first in the steady state.
pub const STEPS: u32 = 2;

/// Builds `config` on a fresh device opened with `options` and runs [`STEPS`] steps of
/// `batch` rows. Out-of-memory is a result (`fits() == false`); any other failure is an error.
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
    measure_setup_on(device, &StepSetup::from_rows(config, batch)?, seed)
}

/// [`measure_step_on`] with the allocator's events of the measurement, from building the
/// model to the end of the last step or the failure — taken before the network is dropped,
/// so the timeline ends where the training ends, not in its teardown.
pub fn measure_step_traced(
    device: &Device,
    config: &MlpConfig,
    batch: u64,
    seed: u64,
) -> Result<(StepMemory, Trace), Error> {
    device.start_trace();
    let setup = StepSetup::from_rows(config, batch)?;
    let mut trace = None;
    let step = measure_steps(device, &setup, seed, None, &mut || {
        trace = Some(device.take_trace());
    })?;
    Ok((step, trace.unwrap_or_else(|| device.take_trace())))
}

/// [`measure_step`] of a setup checked where it was made.
pub fn measure_setup(
    options: &DeviceOptions,
    setup: &StepSetup,
    seed: u64,
) -> Result<StepMemory, Error> {
    measure_setup_on(&Device::new(options)?, setup, seed)
}

/// [`measure_setup`] on a device the caller opened (it should be fresh).
pub fn measure_setup_on(
    device: &Device,
    setup: &StepSetup,
    seed: u64,
) -> Result<StepMemory, Error> {
    measure_steps(device, setup, seed, None, &mut || {})
}

/// [`measure_setup_on`], planning only the first `micro_batch_limit` micro-batches of each
/// step when given.
pub(crate) fn measure_steps(
    device: &Device,
    setup: &StepSetup,
    seed: u64,
    micro_batch_limit: Option<u64>,
    // Called once the measurement is over, while the network still exists.
    done: &mut dyn FnMut(),
) -> Result<StepMemory, Error> {
    let (config, batch) = (setup.config(), setup.rows());
    let executed = device.info().executes;
    let snapshot = |oom: Option<OutOfMemory>, failed_in, model_allocated, loss| {
        let stats = device.memory_stats();
        StepMemory {
            model_allocated,
            peak_allocated: stats.allocated_bytes.all.peak,
            peak_reserved: stats.reserved_bytes.all.peak,
            peak_requested: stats.requested_bytes.all.peak,
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
            done();
            return Ok(snapshot(
                Some(*o),
                Some(Phase::Model),
                device.memory_allocated(),
                None,
            ));
        }
        Err(e) => return Err(e),
    };
    if let Some(n) = micro_batch_limit {
        mlp.limit_micro_batches(n);
    }
    let model_allocated = device.memory_allocated();
    let data = executed.then(|| Dataset::generate(batch, seed).train);
    let rows = match &data {
        Some(split) => Batch::Data(split),
        None => Batch::Planned(batch),
    };
    let mut loss = None;
    for _ in 0..STEPS {
        match mlp.train_step(rows) {
            Ok(r) => loss = r.loss,
            Err(Error::OutOfMemory(o)) => {
                done();
                return Ok(snapshot(Some(*o), Some(mlp.pass()), model_allocated, None));
            }
            Err(e) => return Err(e),
        }
    }
    done();
    Ok(snapshot(None, None, model_allocated, loss))
}

/// The result of searching for the largest setting that fits.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Search {
    /// The largest value that fits, if any does.
    pub best: Option<u64>,
    /// Every value tried, in order, with what it measured.
    pub attempts: Vec<(u64, StepMemory)>,
}

/// The largest `n` in `1..=max` whose step `probe(n)` fits, with every attempt's
/// measurement. Assumes a larger `n` never needs less memory.
pub fn search_largest(
    max: u64,
    mut probe: impl FnMut(u64) -> Result<StepMemory, Error>,
) -> Result<Search, Error> {
    let mut attempts = Vec::new();
    let best = largest_where(max, |n| {
        let m = probe(n)?;
        let fits = m.fits();
        attempts.push((n, m));
        Ok::<_, Error>(fits)
    })?;
    Ok(Search { best, attempts })
}

/// The largest batch (up to `max_rows`) whose training step fits, each probe on a fresh
/// device opened with `options`.
pub fn largest_batch(
    options: &DeviceOptions,
    config: &MlpConfig,
    max_rows: u64,
) -> Result<Search, Error> {
    search_largest(max_rows, |rows| measure_step(options, config, rows, 0))
}

/// The most hidden layers (up to `max_layers`) whose training step at `batch` fits.
pub fn deepest_network(
    options: &DeviceOptions,
    config: &MlpConfig,
    batch: u64,
    max_layers: u64,
) -> Result<Search, Error> {
    search_largest(max_layers, |layers| {
        measure_step(options, &config.clone().with_layers(layers), batch, 0)
    })
}
