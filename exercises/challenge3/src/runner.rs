//! The demo's training loop: epochs of mini-batches through the engine, with the allocator's
//! figures after every epoch, and a choice of what the loop keeps alive between steps — the
//! one thing that separates a flat run from a leak or from a fragmented cache.

use gpumem::alloc::{OutOfMemory, Trace};
use gpumem::data::{Dataset, Split, epoch_batches, rng};
use gpumem::mlp::{Batch, Mlp, MlpConfig, StepOutputs};
use gpumem::{Device, DeviceOptions, Error};
use serde::Serialize;

/// What the loop keeps of each step's outputs (logits and per-row losses on the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// Nothing: outputs are read and dropped inside the step. Memory stays flat.
    Nothing,
    /// The last step's outputs, to log them: a common habit, harmless for the amount of
    /// memory, but those small tensors pin whatever cached segment they were carved from.
    Last,
    /// Every step's outputs, "for later": the leak.
    Every,
}

/// A run to make.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub options: DeviceOptions,
    pub config: MlpConfig,
    pub samples: u64,
    pub batch: u64,
    pub epochs: u64,
    pub seed: u64,
    pub keep: Keep,
    /// Call `empty_cache()` before a batch whose size differs from the one before it.
    pub empty_cache_on_size_change: bool,
    pub trace: bool,
}

/// One epoch's figures, all from the allocator.
#[derive(Debug, Clone, Serialize)]
pub struct EpochMemory {
    pub epoch: u64,
    pub steps: u64,
    /// `memory_allocated()` at the end of the epoch.
    pub allocated: u64,
    /// `memory_reserved()` at the end of the epoch.
    pub reserved: u64,
    /// `max_memory_allocated()` over this epoch (peaks are reset at each epoch's start).
    pub peak_allocated: u64,
    /// `max_memory_reserved()` over this epoch.
    pub peak_reserved: u64,
    /// Mean training loss over the epoch's rows (only when kernels ran).
    pub loss: Option<f32>,
}

/// Where a run stopped for lack of memory.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub epoch: u64,
    /// Step within the epoch, from 1.
    pub step: u64,
    /// Rows of the batch that failed.
    pub rows: u64,
    pub oom: OutOfMemory,
}

/// What a run did.
#[derive(Debug, Serialize)]
pub struct RunResult {
    pub epochs: Vec<EpochMemory>,
    pub failure: Option<Failure>,
    /// Every batch's rows, in order, as far as the run got.
    pub batches: Vec<u64>,
    /// Whether kernels ran (false on `plan`).
    pub executed: bool,
    pub device_allocations: u64,
    pub device_frees: u64,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    #[serde(skip)]
    pub trace: Trace,
    #[serde(skip)]
    pub phases: Vec<(usize, String)>,
    #[serde(skip)]
    pub summary: String,
}

impl RunResult {
    /// Steps run to the end, over all epochs.
    pub fn steps(&self) -> u64 {
        self.epochs.iter().map(|e| e.steps).sum()
    }
}

/// Row counts of one epoch's batches: full batches, the last one short if the data does not
/// divide evenly — and the rows themselves when kernels run.
fn epoch_plan(
    data: Option<&Dataset>,
    samples: u64,
    batch: u64,
    shuffle: &mut rand_chacha::ChaCha8Rng,
) -> Vec<(u64, Option<Split>)> {
    match data {
        Some(d) => epoch_batches(d.train.len(), batch as usize, shuffle)
            .into_iter()
            .map(|idx| (idx.len() as u64, Some(d.train.gather(&idx))))
            .collect(),
        None => (0..samples.div_ceil(batch))
            .map(|i| (batch.min(samples - i * batch), None))
            .collect(),
    }
}

/// Builds the network on a fresh device and trains it as `spec` says. Out-of-memory ends the
/// run and is reported in the result; any other failure is an error.
pub fn run(spec: &RunSpec) -> Result<RunResult, Error> {
    let device = Device::new(&spec.options)?;
    let executed = device.info().executes;
    if spec.trace {
        device.start_trace();
    }
    let mut phases = vec![(0, "model".to_string())];
    let mut mlp = Mlp::new(&device, &spec.config, spec.seed)?;
    let data = executed.then(|| Dataset::generate(spec.samples, spec.seed));
    let mut shuffle = rng(spec.seed);
    let mut result = RunResult {
        epochs: Vec::new(),
        failure: None,
        batches: Vec::new(),
        executed,
        device_allocations: 0,
        device_frees: 0,
        peak_allocated: 0,
        peak_reserved: 0,
        trace: Trace::default(),
        phases: Vec::new(),
        summary: String::new(),
    };
    let mut kept: Vec<StepOutputs> = Vec::new();
    let mut trace = Trace::default();
    let (mut peak_allocated, mut peak_reserved) = (0, 0);
    'epochs: for epoch in 1..=spec.epochs {
        if spec.trace {
            trace.events.extend(device.take_trace().events);
            phases.push((trace.events.len(), format!("epoch {epoch}")));
            device.start_trace();
        }
        device.reset_peak_memory_stats();
        let plan = epoch_plan(data.as_ref(), spec.samples, spec.batch, &mut shuffle);
        let (mut loss_sum, mut rows_seen) = (0f64, 0u64);
        for (i, (rows, split)) in plan.iter().enumerate() {
            if spec.empty_cache_on_size_change && result.batches.last().is_some_and(|&r| r != *rows)
            {
                device.empty_cache();
            }
            result.batches.push(*rows);
            let batch = split.as_ref().map_or(Batch::Planned(*rows), Batch::Data);
            let step = mlp.train_step_with_outputs(batch);
            let (r, outputs) = match step {
                Ok(ok) => ok,
                Err(Error::OutOfMemory(oom)) => {
                    result.failure = Some(Failure {
                        epoch,
                        step: i as u64 + 1,
                        rows: *rows,
                        oom: *oom,
                    });
                    peak_allocated = peak_allocated.max(device.max_memory_allocated());
                    peak_reserved = peak_reserved.max(device.max_memory_reserved());
                    break 'epochs;
                }
                Err(e) => return Err(e),
            };
            if let Some(loss) = r.loss {
                loss_sum += f64::from(loss) * r.rows as f64;
                rows_seen += r.rows;
            }
            match spec.keep {
                Keep::Nothing => drop(outputs),
                Keep::Last => {
                    // Assigning drops the previous step's outputs only now, after this step
                    // ran: both were alive during the step.
                    kept.clear();
                    kept.push(outputs);
                }
                Keep::Every => kept.push(outputs),
            }
        }
        peak_allocated = peak_allocated.max(device.max_memory_allocated());
        peak_reserved = peak_reserved.max(device.max_memory_reserved());
        result.epochs.push(EpochMemory {
            epoch,
            steps: plan.len() as u64,
            allocated: device.memory_allocated(),
            reserved: device.memory_reserved(),
            peak_allocated: device.max_memory_allocated(),
            peak_reserved: device.max_memory_reserved(),
            loss: (rows_seen > 0).then(|| (loss_sum / rows_seen as f64) as f32),
        });
    }
    if spec.trace {
        trace.events.extend(device.take_trace().events);
    }
    let stats = device.memory_stats();
    result.device_allocations = stats.num_device_alloc;
    result.device_frees = stats.num_device_free;
    result.peak_allocated = peak_allocated;
    result.peak_reserved = peak_reserved;
    result.summary = device.memory_summary();
    result.trace = trace;
    result.phases = if spec.trace { phases } else { Vec::new() };
    drop(kept);
    Ok(result)
}
