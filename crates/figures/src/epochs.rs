//! Challenge 3's two late failures, from the engine on the `plan` backing: a loop that keeps
//! every step's outputs (a leak) beside one that drops them, and a loop that keeps the last
//! step's outputs while the last batch of an epoch is short (a fragmented cache), with each
//! of the allocator's remedies.
//!
//! The loop is the one of `cargo run -p challenge3 -- --scenario leak|fragmentation` (its
//! `src/runner.rs`), on the scenarios' default settings, so the book quotes what the demo
//! prints. It is written here from `gpumem` because the figures crate cannot depend on the
//! challenge crate: that crate depends on this one for its timeline chart.

use crate::data::SEED;
use anyhow::{Result, anyhow};
use gpumem::alloc::{AllocatorConfig, OutOfMemory, Trace};
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer, StepOutputs};
use gpumem::{Backend, Device, DeviceOptions, Error, MemorySpec};
use std::sync::OnceLock;

const MIB: u64 = 1 << 20;

/// What the loop keeps of each step's outputs (logits and per-row losses on the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Nothing: the outputs drop inside the step. Memory stays flat.
    Nothing,
    /// The last step's outputs, to log them.
    Last,
    /// Every step's outputs, "for later": the leak.
    Every,
}

/// A training loop to run.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    /// The card's capacity.
    pub card: u64,
    pub allocator: AllocatorConfig,
    pub config: MlpConfig,
    /// Rows of the training set.
    pub samples: u64,
    /// Rows per batch; an epoch's last batch has what is left.
    pub batch: u64,
    pub epochs: u64,
    pub keep: Keep,
    /// Call `empty_cache()` before a batch whose size differs from the one before it.
    pub empty_cache_on_size_change: bool,
}

/// One epoch's figures, from the allocator.
#[derive(Debug, Clone, Copy)]
pub struct Epoch {
    pub steps: u64,
    /// `memory_allocated()` at the end of the epoch.
    pub allocated: u64,
    /// `memory_reserved()` at the end of the epoch.
    pub reserved: u64,
    /// `max_memory_allocated()` over the epoch (peaks are reset at its start).
    pub peak_allocated: u64,
    /// `max_memory_reserved()` over the epoch.
    pub peak_reserved: u64,
}

/// Where a loop stopped for lack of memory.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Epoch, from 1.
    pub epoch: u64,
    /// Step within the epoch, from 1.
    pub step: u64,
    /// Rows of the batch that failed.
    pub rows: u64,
    pub oom: OutOfMemory,
}

/// What a loop did.
#[derive(Debug)]
pub struct LoopRun {
    /// The epochs that finished.
    pub epochs: Vec<Epoch>,
    pub failure: Option<Failure>,
    /// Every batch's rows, in order, as far as the loop got.
    pub batches: Vec<u64>,
    /// Segment allocations: calls to the device (`cudaMalloc`).
    pub device_allocations: u64,
    /// Segment releases: calls to the device (`cudaFree`).
    pub device_frees: u64,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    /// Every allocator event, model creation first.
    pub trace: Trace,
    /// Where the model and each epoch start in `trace.events`, and their names.
    pub phases: Vec<(usize, String)>,
}

impl LoopRun {
    /// Steps run to the end, over all epochs.
    pub fn steps(&self) -> u64 {
        self.epochs.iter().map(|e| e.steps).sum()
    }
}

/// Builds the network on a fresh `plan` device of the spec's card and trains it as the spec
/// says, recording the allocator's trace. Out-of-memory ends the loop and is reported in the
/// result; any other failure is an error.
pub fn run(spec: &LoopSpec) -> Result<LoopRun> {
    let device = Device::new(&DeviceOptions {
        backend: Backend::Plan,
        memory: MemorySpec::Bytes(spec.card),
        allocator: spec.allocator.clone(),
    })?;
    device.start_trace();
    let mut phases = vec![(0, "model".to_string())];
    let mut trace = Trace::default();
    let mut mlp = Mlp::new(&device, &spec.config, SEED)?;
    let mut kept: Vec<StepOutputs> = Vec::new();
    let (mut epochs, mut batches, mut failure) = (Vec::new(), Vec::<u64>::new(), None);
    let (mut peak_allocated, mut peak_reserved) = (0, 0);
    let sizes: Vec<u64> = (0..spec.samples.div_ceil(spec.batch))
        .map(|i| spec.batch.min(spec.samples - i * spec.batch))
        .collect();
    'epochs: for epoch in 1..=spec.epochs {
        trace.events.extend(device.take_trace().events);
        phases.push((trace.events.len(), format!("epoch {epoch}")));
        device.start_trace();
        device.reset_peak_memory_stats();
        for (i, &rows) in sizes.iter().enumerate() {
            if spec.empty_cache_on_size_change && batches.last().is_some_and(|&r| r != rows) {
                device.empty_cache();
            }
            batches.push(rows);
            let outputs = match mlp.train_step_with_outputs(Batch::Planned(rows)) {
                Ok((_, outputs)) => outputs,
                Err(Error::OutOfMemory(oom)) => {
                    failure = Some(Failure {
                        epoch,
                        step: i as u64 + 1,
                        rows,
                        oom: *oom,
                    });
                    peak_allocated = peak_allocated.max(device.max_memory_allocated());
                    peak_reserved = peak_reserved.max(device.max_memory_reserved());
                    break 'epochs;
                }
                Err(e) => return Err(e.into()),
            };
            match spec.keep {
                Keep::Nothing => drop(outputs),
                // The previous step's outputs drop only now, after this step ran.
                Keep::Last => {
                    kept.clear();
                    kept.push(outputs);
                }
                Keep::Every => kept.push(outputs),
            }
        }
        peak_allocated = peak_allocated.max(device.max_memory_allocated());
        peak_reserved = peak_reserved.max(device.max_memory_reserved());
        epochs.push(Epoch {
            steps: sizes.len() as u64,
            allocated: device.memory_allocated(),
            reserved: device.memory_reserved(),
            peak_allocated: device.max_memory_allocated(),
            peak_reserved: device.max_memory_reserved(),
        });
    }
    trace.events.extend(device.take_trace().events);
    let stats = device.memory_stats();
    drop(kept);
    Ok(LoopRun {
        epochs,
        failure,
        batches,
        device_allocations: stats.num_device_alloc,
        device_frees: stats.num_device_free,
        peak_allocated,
        peak_reserved,
        trace,
        phases,
    })
}

/// `cargo run -p challenge3 -- --scenario leak`'s defaults: the lesson's network at batch
/// 32 on 20 000 rows for 8 epochs, on a 4 MiB card that the flat loop fits with room to spare
/// and the leak fills within a few epochs.
pub fn leak(keep: Keep) -> LoopSpec {
    LoopSpec {
        card: 4 * MIB,
        allocator: AllocatorConfig::default(),
        config: MlpConfig::lesson(2000).with_optimizer(Optimizer::LESSON),
        samples: 20_000,
        batch: 32,
        epochs: 8,
        keep,
        empty_cache_on_size_change: false,
    }
}

/// The leaking loop of [`leak`], run once per process: its chart, the chart's alt text and
/// the book's table all quote it, and it takes a few hundred thousand allocator events.
pub fn leaking() -> Result<&'static LoopRun> {
    static RUN: OnceLock<std::result::Result<LoopRun, String>> = OnceLock::new();
    RUN.get_or_init(|| run(&leak(Keep::Every)).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow!("the leaking loop: {e}"))
}

/// `cargo run -p challenge3 -- --scenario fragmentation`'s defaults: two hidden layers of
/// 400, batches of 264 000 rows and a last one of 262 000, 2 epochs, on a 1400 MiB card,
/// the loop keeping the last step's outputs — with `allocator`, and an `empty_cache()` when
/// the batch size changes if `empty_cache_on_size_change`.
pub fn fragmentation(allocator: AllocatorConfig, empty_cache_on_size_change: bool) -> LoopSpec {
    LoopSpec {
        card: 1400 * MIB,
        allocator,
        config: MlpConfig::lesson(400).with_layers(2),
        samples: 790_000,
        batch: 264_000,
        epochs: 2,
        keep: Keep::Last,
        empty_cache_on_size_change,
    }
}

/// The remedies the demo tries, in its order: a name, the allocator's settings, and whether
/// the loop empties the cache when the batch size changes. The split limit is well under the
/// activations (any value above 20 MiB and below them works); the threshold is PyTorch's
/// documented example.
pub fn remedies() -> Vec<(&'static str, AllocatorConfig, bool)> {
    vec![
        (
            "`--max-split-size`",
            AllocatorConfig {
                max_split_size: Some(64 * MIB),
                ..AllocatorConfig::default()
            },
            false,
        ),
        (
            "`--no-caching`",
            AllocatorConfig {
                caching: false,
                ..AllocatorConfig::default()
            },
            false,
        ),
        (
            "`--gc-threshold`",
            AllocatorConfig {
                gc_threshold: Some(0.8),
                ..AllocatorConfig::default()
            },
            false,
        ),
        (
            "`empty_cache()` when the batch size changes",
            AllocatorConfig::default(),
            true,
        ),
    ]
}
