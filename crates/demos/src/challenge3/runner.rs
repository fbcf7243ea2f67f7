//! The demo's runs: the engine's training loop ([`gpumem::train::run`]) observed with the
//! demo's policy — what the loop keeps alive between steps (the one thing that separates a
//! flat run from a leak or from a fragmented cache), an optional `empty_cache()` when the
//! batch size changes, the allocator's trace — and its report: the allocator's figures
//! after every epoch.

use gpumem::alloc::{OutOfMemory, Trace};
use gpumem::data::Dataset;
use gpumem::mlp::{Mlp, MlpConfig, StepOutputs, StepResult};
use gpumem::size::format_bytes;
use gpumem::train::{self, BatchSize, EpochTotals, Observer, Progress, Rows, Schedule};
use gpumem::{Device, DeviceOptions, Error};
use serde::Serialize;
use std::num::NonZeroU64;

/// What the loop keeps of each step's outputs (`y_pred` and the loss, on the device).
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
    pub batch: NonZeroU64,
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
    /// The memory snapshot, when the device recorded its history (`--memory-snapshot`): the
    /// one taken at the out-of-memory if the run ended in one, else at the end.
    #[serde(skip)]
    pub snapshot: Option<gpumem::snapshot::Snapshot>,
}

impl RunResult {
    /// Steps run to the end, over all epochs.
    pub fn steps(&self) -> u64 {
        self.epochs.iter().map(|e| e.steps).sum()
    }
}

impl RunSpec {
    fn schedule(&self) -> Schedule {
        Schedule {
            epochs: self.epochs,
            batch: BatchSize::Rows(self.batch),
            seed: self.seed,
            max_steps_per_epoch: None,
        }
    }
}

/// One row per epoch: the allocator's figures (and the loss when kernels ran).
pub fn epoch_rows(epochs: &[EpochMemory]) -> Vec<Vec<String>> {
    epochs
        .iter()
        .map(|e| {
            vec![
                e.epoch.to_string(),
                e.steps.to_string(),
                format_bytes(e.allocated),
                format_bytes(e.reserved),
                format_bytes(e.peak_allocated),
                format_bytes(e.peak_reserved),
                e.loss.map_or("-".into(), |l| format!("{l:.4}")),
            ]
        })
        .collect()
}

/// The headers of [`epoch_rows`].
pub const EPOCH_HEADERS: [&str; 7] = [
    "epoch",
    "steps",
    "allocated",
    "reserved",
    "peak allocated",
    "peak reserved",
    "loss",
];

/// The demo's observer: applies the spec's policy around the engine's steps and writes down
/// what the allocator did.
struct Watcher<'a> {
    spec: &'a RunSpec,
    device: &'a Device,
    /// The outputs the loop keeps alive, as [`RunSpec::keep`] says.
    kept: Vec<StepOutputs>,
    /// The step running or last run: where an out-of-memory error happened.
    at: Option<Progress>,
    batches: Vec<u64>,
    epochs: Vec<EpochMemory>,
    trace: Trace,
    phases: Vec<(usize, String)>,
    peak_allocated: u64,
    peak_reserved: u64,
}

impl Watcher<'_> {
    /// Folds this epoch's peaks (reset at each epoch's start) into the run's.
    fn note_peaks(&mut self) {
        self.peak_allocated = self.peak_allocated.max(self.device.max_memory_allocated());
        self.peak_reserved = self.peak_reserved.max(self.device.max_memory_reserved());
    }
}

impl Observer for Watcher<'_> {
    /// Always: even a loop that keeps nothing takes the outputs and drops them after the
    /// step, as a loop that reads its loss from them does.
    fn keeps_outputs(&self) -> bool {
        true
    }

    fn before_epoch(&mut self, _mlp: &Mlp, epoch: u64) -> Result<(), Error> {
        if self.spec.trace {
            self.trace.events.extend(self.device.take_trace().events);
            self.phases
                .push((self.trace.events.len(), format!("epoch {epoch}")));
            self.device.start_trace();
        }
        self.device.reset_peak_memory_stats();
        Ok(())
    }

    fn before_step(&mut self, _mlp: &Mlp, at: Progress) -> Result<(), Error> {
        if self.spec.empty_cache_on_size_change
            && self.batches.last().is_some_and(|&r| r != at.rows)
        {
            self.device.empty_cache();
        }
        self.batches.push(at.rows);
        self.at = Some(at);
        Ok(())
    }

    fn after_step(
        &mut self,
        _mlp: &Mlp,
        _at: Progress,
        _result: &StepResult,
        outputs: Option<StepOutputs>,
    ) -> Result<(), Error> {
        match self.spec.keep {
            Keep::Nothing => drop(outputs),
            Keep::Last => {
                // Replacing drops the previous step's outputs only now, after this step
                // ran: both were alive during the step.
                self.kept.clear();
                self.kept.extend(outputs);
            }
            Keep::Every => self.kept.extend(outputs),
        }
        Ok(())
    }

    fn after_epoch(&mut self, _mlp: &Mlp, totals: &EpochTotals) -> Result<(), Error> {
        self.note_peaks();
        self.epochs.push(EpochMemory {
            epoch: totals.epoch,
            steps: totals.steps,
            allocated: self.device.memory_allocated(),
            reserved: self.device.memory_reserved(),
            peak_allocated: self.device.max_memory_allocated(),
            peak_reserved: self.device.max_memory_reserved(),
            loss: totals.loss(),
        });
        Ok(())
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
    let mut mlp = Mlp::new(&device, &spec.config, spec.seed)?;
    let data = executed.then(|| Dataset::generate(spec.samples, spec.seed));
    let rows = data
        .as_ref()
        .map_or(Rows::Planned(spec.samples), Rows::Data);
    let mut watcher = Watcher {
        spec,
        device: &device,
        kept: Vec::new(),
        at: None,
        batches: Vec::new(),
        epochs: Vec::new(),
        trace: Trace::default(),
        phases: vec![(0, "model".to_string())],
        peak_allocated: 0,
        peak_reserved: 0,
    };
    let failure = match train::run(&mut mlp, rows, &spec.schedule(), &mut watcher) {
        Ok(_) => None,
        Err(Error::OutOfMemory(oom)) => {
            let Some(at) = watcher.at else {
                return Err(Error::OutOfMemory(oom));
            };
            watcher.note_peaks();
            Some(Failure {
                epoch: at.epoch,
                step: at.step,
                rows: at.rows,
                oom: *oom,
            })
        }
        Err(e) => return Err(e),
    };
    if spec.trace {
        watcher.trace.events.extend(device.take_trace().events);
    }
    let stats = device.memory_stats();
    Ok(RunResult {
        epochs: watcher.epochs,
        failure,
        batches: watcher.batches,
        executed,
        device_allocations: stats.num_device_alloc,
        device_frees: stats.num_device_free,
        peak_allocated: watcher.peak_allocated,
        peak_reserved: watcher.peak_reserved,
        trace: watcher.trace,
        phases: if spec.trace {
            watcher.phases
        } else {
            Vec::new()
        },
        summary: device.memory_summary(),
        snapshot: device.is_history_enabled().then(|| {
            device
                .oom_snapshot()
                .unwrap_or_else(|| device.memory_snapshot())
        }),
    })
}
