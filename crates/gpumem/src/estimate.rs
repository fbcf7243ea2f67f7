//! The memory equation, written as code a reader can follow term by term:
//!
//! ```text
//! peak allocated = parameters + gradients + optimizer state      (the model's, once they exist)
//!                + batch                                         (x, y and y_pred)
//!                + activations                                   (what the forward pass made and kept)
//!                + temporaries                                   (the backward pass's and the optimizer's)
//!                + workspaces                                    (cuBLAS's, not tensors: 0 on the ideal card)
//! ```
//!
//! each term taken at the busiest moment of two steps of PyTorch's training loop. The terms
//! change from moment to moment — gradients appear during the backward pass while the
//! activations are let go — so the equation walks the step's tensors in PyTorch's order
//! (`schedule`) and keeps the largest total. Every tensor is counted as the block the
//! allocator gives it (see [`block_bytes`]), so inside its domain ([`is_exact`]) the result
//! is what `max_memory_allocated()` reports after two steps — to the byte. This is arithmetic
//! only: nothing is allocated or run to get it.

mod ledger;
mod schedule;
mod setup;
#[cfg(test)]
mod tests;

pub use setup::StepSetup;

use crate::alloc::{LARGE_BUFFER, MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_SIZE, round_size};
use crate::cublas::WorkspaceRules;
use crate::error::Error;
use crate::mlp::MlpConfig;
use crate::mlp::micro_batches;
use crate::role::Role;
use crate::size::format_bytes;
use std::fmt;

// ANCHOR: bytes_per_value
/// Bytes of one float32 value.
const F32: u64 = 4;
/// Bytes of one label: PyTorch's `cross_entropy` wants int64 class indices.
const LABEL: u64 = 8;
// ANCHOR_END: bytes_per_value

/// The six terms of the equation, and the workspaces beside them: a view of the tensors'
/// roles ([`Role`]), which the walk gives its tensors as the engine does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    Parameters,
    Gradients,
    OptimizerState,
    Batch,
    Activations,
    Temporaries,
    /// Not a tensor: the matrix products' library workspaces (none on a tensors-only card).
    Workspaces,
}

impl From<Role> for Term {
    /// What the forward pass makes is an activation (autocast's copies of the parameters
    /// too); what the backward pass and the optimizer make on top is a temporary (a gradient
    /// on its way into `.grad` too). One card has no communication buffers: counted as
    /// temporaries if there were.
    fn from(role: Role) -> Term {
        match role {
            Role::Parameter { .. } => Term::Parameters,
            Role::Gradient { .. } => Term::Gradients,
            Role::OptimizerState { .. } | Role::LossScaler => Term::OptimizerState,
            Role::Input | Role::Labels | Role::Prediction => Term::Batch,
            Role::ParameterCopy { .. } | Role::Activation { .. } | Role::Forward => {
                Term::Activations
            }
            Role::GradientPart { .. }
            | Role::ActivationGradient
            | Role::Temporary
            | Role::CommBuffer => Term::Temporaries,
            Role::Workspace => Term::Workspaces,
        }
    }
}

// ANCHOR: block_bytes
/// The block the caching allocator hands out for a fresh request of `bytes`.
///
/// Requests are rounded up to 512 B. A request of 10 MiB or more gets a segment rounded up to
/// 2 MiB; if at most 1 MiB of that segment is left over, the allocator does not split it off,
/// so the tensor's block — and `memory_allocated()` — includes it.
pub fn block_bytes(bytes: u64) -> u64 {
    let r = round_size(bytes).unwrap_or(u64::MAX);
    if r < MIN_LARGE_ALLOC {
        return r;
    }
    let segment = r.next_multiple_of(ROUND_LARGE);
    if segment - r <= SMALL_SIZE {
        segment
    } else {
        r
    }
}
// ANCHOR_END: block_bytes

/// Identical requests between 1 MiB and 10 MiB, allocated one after another, fill 20 MiB
/// segments `per_segment` at a time; the last in each segment takes the leftover bytes
/// when there are at most 1 MiB of them (too few to split off).
struct SharedSegments {
    per_segment: u64,
    leftover: u64,
}

impl SharedSegments {
    fn new(request: u64) -> Self {
        if request <= SMALL_SIZE || request >= MIN_LARGE_ALLOC {
            return Self {
                per_segment: u64::MAX,
                leftover: 0,
            };
        }
        let per_segment = LARGE_BUFFER / request;
        let rest = LARGE_BUFFER - per_segment * request;
        Self {
            per_segment,
            leftover: if rest <= SMALL_SIZE { rest } else { 0 },
        }
    }

    /// Leftover bytes taken by requests `from..to` (0-based positions in the sequence).
    fn leftover_taken(&self, from: u64, to: u64) -> u64 {
        (to / self.per_segment - from / self.per_segment) * self.leftover
    }
}

/// The memory of the busiest moment of a training step, by category, in bytes (blocks, as
/// allocated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Estimate {
    /// Weights and biases.
    pub parameters: u64,
    /// The gradients alive at that moment (during the backward pass, those already made).
    pub gradients: u64,
    /// The optimizer's state: momentum buffers, Adam's running averages, the loss scaler's.
    pub optimizer_state: u64,
    /// The batch: features `x`, int64 labels `y` and the predictions `y_pred`, which the
    /// loop holds for the whole step.
    pub batch: u64,
    /// What the forward pass made and still holds: activations saved for the backward pass,
    /// the loss, autocast's float16 copies.
    pub activations: u64,
    /// What the backward pass and the optimizer make on top: gradients flowing back, the
    /// loss's seed, Adam's square roots.
    pub temporaries: u64,
    /// Not a tensor: the cuBLAS/cuBLASLt workspaces the matrix products hold (and a per-call
    /// one, when it is the peak's), 0 on a tensors-only card ([`crate::cublas`]).
    pub workspaces: u64,
    /// The sum: what `max_memory_allocated()` reports after two steps on a fresh device.
    pub peak_allocated: u64,
    /// Learnable values.
    pub parameter_count: u64,
    /// Hidden layers computed again during the backward passes of one update (activation
    /// checkpointing).
    pub recomputed_layers: u64,
}

impl Estimate {
    /// The six terms of the equation, named, in the order the book adds them up.
    pub fn terms(&self) -> [(&'static str, u64); 6] {
        [
            ("parameters", self.parameters),
            ("gradients", self.gradients),
            ("optimizer state", self.optimizer_state),
            ("batch", self.batch),
            ("activations", self.activations),
            ("temporaries", self.temporaries),
        ]
    }

    /// What adds up to the peak: the six terms, and the workspaces when there are any.
    pub fn categories(&self) -> Vec<(&'static str, u64)> {
        let mut out = self.terms().to_vec();
        if self.workspaces > 0 {
            out.push(("cuBLAS workspaces", self.workspaces));
        }
        out
    }

    /// Memory of the model and its training: parameters, gradients, optimizer state.
    pub fn persistent(&self) -> u64 {
        self.parameters + self.gradients + self.optimizer_state
    }
}

/// What training `config` at `batch` rows costs at its busiest moment on a tensors-only card,
/// or why the setup is invalid (zero sizes, or sizes whose bytes do not fit in 64 bits).
pub fn estimate(config: &MlpConfig, batch: u64) -> Result<Estimate, Error> {
    estimate_on(config, batch, WorkspaceRules::NONE)
}

/// [`estimate`] on a card whose matrix products take `workspaces` through the allocator.
pub fn estimate_on(
    config: &MlpConfig,
    batch: u64,
    workspaces: WorkspaceRules,
) -> Result<Estimate, Error> {
    Ok(StepSetup::from_rows(config, batch)?.estimate_on(workspaces))
}

impl StepSetup {
    /// What training this setup costs at its busiest moment on a tensors-only card.
    pub fn estimate(&self) -> Estimate {
        self.estimate_on(WorkspaceRules::NONE)
    }

    /// [`StepSetup::estimate`] on a card whose matrix products take `workspaces` through the
    /// allocator.
    pub fn estimate_on(&self, workspaces: WorkspaceRules) -> Estimate {
        equation(self.config(), self.rows(), workspaces)
    }

    /// The peak of the bytes the step's tensors ask for, before the allocator's rounding: what
    /// PyTorch's MemTracker counts, and the engine's `peak_requested`.
    pub fn requested_peak(&self) -> u64 {
        let walk = two_steps(schedule::Walk::new(self.config()).raw(), |_| 0, self.rows());
        walk.led.peak.iter().sum()
    }
}

/// The equation for a setup [`StepSetup`] checked.
fn equation(config: &MlpConfig, rows: u64, workspaces: WorkspaceRules) -> Estimate {
    let sp = config.strategy.precision.parameters().size();
    // Hidden-to-hidden weights between 1 and 10 MiB share 20 MiB segments; the last one
    // placed in each segment also takes the segment's leftover when it is 1 MiB or less.
    let shared =
        SharedSegments::new(round_size(config.hidden * config.hidden * sp).unwrap_or(u64::MAX));
    let layers = config.layers as usize;
    let leftover = |i: usize| {
        if i == 0 || i >= layers {
            return 0;
        }
        let k = i as u64 - 1;
        shared.leftover_taken(k, k + 1)
    };
    // ANCHOR: sum
    let walk = two_steps(
        schedule::Walk::new(config).with_workspaces(workspaces),
        leftover,
        rows,
    );
    let [
        parameters,
        gradients,
        optimizer_state,
        batch,
        activations,
        temporaries,
        workspaces,
    ] = walk.led.peak;
    let peak_allocated =
        parameters + gradients + optimizer_state + batch + activations + temporaries + workspaces;
    // ANCHOR_END: sum
    let micro = micro_batches(rows, config.strategy.accumulation).len() as u64;
    Estimate {
        parameters,
        gradients,
        optimizer_state,
        batch,
        activations,
        temporaries,
        workspaces,
        peak_allocated,
        parameter_count: config.parameter_count(),
        // The walk plans up to three micro-batches of each of two steps; one update runs
        // them all.
        recomputed_layers: walk.recomputed / (2 * micro.min(3)) * micro,
    }
}

/// [`StepSetup::requested_peak`] of `config` at `batch` rows, or why the setup is invalid.
pub fn requested_peak(config: &MlpConfig, batch: u64) -> Result<u64, Error> {
    Ok(StepSetup::from_rows(config, batch)?.requested_peak())
}

/// The model, then two steps: the second is the steady state (the optimizer's state exists,
/// and the first step's `y_pred` and loss live until the second rebinds them).
fn two_steps<'a>(
    mut walk: schedule::Walk<'a>,
    leftover: impl Fn(usize) -> u64,
    batch: u64,
) -> schedule::Walk<'a> {
    walk.parameters(leftover);
    walk.step(batch);
    walk.step(batch);
    walk
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let categories = self.categories();
        let w = categories
            .iter()
            .map(|(n, _)| n.len())
            .max()
            .unwrap_or(0)
            .max(16);
        for (name, bytes) in categories {
            writeln!(f, "{name:>w$}  {:>12}", format_bytes(bytes))?;
        }
        write!(
            f,
            "{:>w$}  {:>12}",
            "peak allocated",
            format_bytes(self.peak_allocated)
        )
    }
}

/// Whether the equation is exact for `config` at `batch` rows: every tensor gets a block of
/// exactly [`block_bytes`] whatever the allocator has cached. That holds when
/// - no tensor is in the 1–10 MiB band: there, tensors share 20 MiB segments and which of
///   them picks up a segment's leftover depends on the order of allocations and frees;
/// - large tensors (10 MiB or more) do not come in two families: weight-shaped ones
///   (weights, gradients, optimizer state, Adam's temporaries) *and* batch-shaped ones
///   (`x`, the activations and their gradients). When both exist, one family's freed blocks
///   can hold the other's tensors with up to 1 MiB to spare, which they then take whole;
/// - the precision is not mixed: autocast's float16 copies and the float32 gradients made
///   from them do the same;
/// - the batch is below 1.31 million rows.
///
/// The lesson's network (one hidden layer, so no large weights) is inside wherever its
/// batch-sized tensors avoid the band: not at its full batch, whose `B × 2` tensors are in it.
/// Outside, see [`band_margin`]. The bytes requested ([`requested_peak`]) are exact
/// everywhere.
pub fn is_exact(config: &MlpConfig, batch: u64) -> bool {
    let p = config.strategy.precision;
    let (sp, sa, sd) = (
        p.parameters().size(),
        p.activations().size(),
        p.data().size(),
    );
    let weights: Vec<u64> = config
        .layer_shapes()
        .iter()
        .flat_map(|&(fan_in, fan_out)| [fan_in * fan_out * sp, fan_out * sp])
        .collect();
    let per_row = [
        config.inputs * sd,
        LABEL,
        config.classes * sa,
        config.classes * F32,
        config.hidden * sa,
    ];
    let mut batch_sized: Vec<u64> = Vec::new();
    for &(_, rows) in micro_batches(batch, config.strategy.accumulation)
        .iter()
        .take(1)
    {
        batch_sized.extend(per_row.iter().map(|&b| rows.saturating_mul(b)));
    }
    batch_sized.extend(per_row[..2].iter().map(|&b| batch.saturating_mul(b)));
    let band = |bytes: &u64| *bytes > SMALL_SIZE && *bytes < MIN_LARGE_ALLOC;
    let large = |bytes: &u64| *bytes >= MIN_LARGE_ALLOC;
    batch < 1_310_000
        && p != crate::mlp::Precision::Mixed
        && !weights.iter().chain(&batch_sized).any(band)
        && !(weights.iter().any(large) && batch_sized.iter().any(large))
}

/// How far the measured peak can be from the equation outside [`is_exact`]'s domain: one
/// leftover of at most 1 MiB for every tensor alive at the peak (the model's tensors, their
/// gradients, state and temporaries, the activations and a few more).
pub fn band_margin(config: &MlpConfig) -> u64 {
    (9 * (config.layers + 1) + config.layers + 12) * SMALL_SIZE
}

/// The setups the book's table and the tests compare with measurements: depths 1–8,
/// widths 5–5000, batches of 1 row to the lesson's full training set, SGD and Adam.
pub fn reference_setups() -> Vec<(MlpConfig, u64)> {
    use crate::data::LESSON_TRAINING_EVENTS as FULL;
    use crate::mlp::Optimizer;
    let adam = Optimizer::adam(0.001);
    let rows: [(u64, u64, u64, bool); 32] = [
        (1, 5, 1, false),
        (1, 5, 32, true),
        (2, 64, 32, false),
        (3, 100, 1000, true),
        (8, 5, 4096, false),
        (1, 2000, 32, false),
        (1, 2000, 32, true),
        (2, 2000, 32, false),
        (5, 5000, 32, false),
        (5, 5000, 32, true),
        (8, 5000, 1, false),
        (8, 5000, 32, true),
        (4, 1000, 64, false),
        (6, 1200, 16, true),
        (3, 1619, 100, true),
        (2, 1620, 100, false),
        (2, 3000, 1000, false),
        (3, 640, 4096, true),
        (7, 300, 65536, false),
        (4, 50, 131_072, true),
        (2, 2500, 8, false),
        (5, 128, 256, true),
        (8, 32, 2048, true),
        (6, 4096, 128, false),
        (1, 2000, FULL, false),
        (1, 2000, FULL, true),
        (3, 2000, FULL, false),
        (8, 2000, FULL, true),
        (1, 5000, FULL, false),
        (2, 500, FULL, true),
        (1, 100, FULL, false),
        (4, 5000, 131_072, false),
    ];
    rows.iter()
        .map(|&(layers, hidden, batch, is_adam)| {
            let config = MlpConfig::lesson(hidden).with_layers(layers);
            let config = if is_adam {
                config.with_optimizer(adam)
            } else {
                config
            };
            (config, batch)
        })
        .collect()
}

/// The most hidden layers (up to `max_layers`) for which the equation's peak stays within
/// `capacity` at `batch` rows with `workspaces` — the depth the memory equation predicts will
/// fit.
pub fn deepest_that_fits(
    config: &MlpConfig,
    batch: u64,
    capacity: u64,
    max_layers: u64,
    workspaces: WorkspaceRules,
) -> Option<u64> {
    // The peak grows with every layer, so the search may double and bisect.
    let fits = |layers: u64| {
        Ok::<_, std::convert::Infallible>(
            estimate_on(&config.clone().with_layers(layers), batch, workspaces)
                .is_ok_and(|e| e.peak_allocated <= capacity),
        )
    };
    crate::search::largest_where(max_layers, fits).unwrap_or_else(|never| match never {})
}
