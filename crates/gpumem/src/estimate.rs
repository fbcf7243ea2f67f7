//! The memory equation, written as code a reader can follow term by term:
//!
//! ```text
//! peak allocated = parameters + gradients + optimizer state      (live as long as the model)
//!                + input batch                                   (x and y)
//!                + activations                                   (a_0 … a_{L-1}, kept for backward)
//!                + temporaries at the peak                       (z, d, logits, loss terms)
//! ```
//!
//! Every tensor is counted as the block the allocator gives it (see [`block_bytes`]), so the
//! result is what `max_memory_allocated()` reports after a step — to the byte. This is
//! arithmetic only: nothing is allocated or run to get it.

use crate::alloc::{LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_SIZE, round_size};
use crate::error::Error;
use crate::mlp::MlpConfig;
use crate::mlp::micro_batches;
use crate::size::format_bytes;
use std::fmt;

// ANCHOR: bytes_per_value
/// Bytes of one float32 value.
const F32: u64 = 4;
// ANCHOR_END: bytes_per_value

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

/// The memory of one training step, by category, in bytes (blocks, as allocated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Estimate {
    /// Weights and biases.
    pub parameters: u64,
    /// One gradient per parameter.
    pub gradients: u64,
    /// Adam's two running averages per parameter; none for SGD.
    pub optimizer_state: u64,
    /// The batch: features `x` and labels `y`.
    pub input_batch: u64,
    /// The hidden activations kept for the backward pass.
    pub activations: u64,
    /// Short-lived tensors alive at the peak (pre-activation or its gradient, logits, loss).
    pub temporaries: u64,
    /// The sum: what `max_memory_allocated()` reports after one step on a fresh device.
    pub peak_allocated: u64,
    /// Learnable values.
    pub parameter_count: u64,
    /// Hidden layers the backward pass computes again (activation checkpointing).
    pub recomputed_layers: u64,
}

impl Estimate {
    /// The six terms of the equation, named, in the order the book adds them up.
    pub fn categories(&self) -> [(&'static str, u64); 6] {
        [
            ("parameters", self.parameters),
            ("gradients", self.gradients),
            ("optimizer state", self.optimizer_state),
            ("input batch", self.input_batch),
            ("activations", self.activations),
            ("temporaries", self.temporaries),
        ]
    }

    /// Memory that lives as long as the model: parameters, gradients, optimizer state.
    pub fn persistent(&self) -> u64 {
        self.parameters + self.gradients + self.optimizer_state
    }
}

/// What a training step of `config` at `batch` rows costs, or why the setup is invalid
/// (zero sizes, or sizes whose bytes do not fit in 64 bits).
pub fn estimate(config: &MlpConfig, batch: u64) -> Result<Estimate, Error> {
    config.validate()?;
    if batch == 0 {
        return Err(Error::Setup(
            "the batch size must be at least 1, got 0".into(),
        ));
    }
    let widest = config.hidden.max(config.inputs).max(config.classes).max(2);
    let fits = batch
        .checked_mul(widest * F32)
        .and_then(|row| row.checked_mul(config.layers + 4))
        .is_some_and(|total| total < u64::MAX / 4);
    if !fits {
        return Err(Error::Setup(format!(
            "a batch of {batch} rows at width {} needs more bytes than 64 bits can count",
            config.hidden
        )));
    }
    let (h, l) = (config.hidden, config.layers);
    let strategy = config.strategy;
    // ANCHOR: model
    // Bytes per value: parameters (and their gradients and state), activations, data.
    let (sp, sa, sd) = (
        strategy.precision.parameters().size(),
        strategy.precision.activations().size(),
        strategy.precision.data().size(),
    );
    // Weights and biases, then their gradients, then the optimizer's state: each a block.
    let copies = 2 + config.optimizer.states_per_parameter();
    let one_copy: u64 = config
        .layer_shapes()
        .iter()
        .map(|&(fan_in, fan_out)| block_bytes(fan_in * fan_out * sp) + block_bytes(fan_out * sp))
        .sum();
    // Hidden-to-hidden weights between 1 and 10 MiB share 20 MiB segments; the last one
    // placed in each segment also takes the segment's leftover when it is 1 MiB or less.
    let shared = SharedSegments::new(round_size(h * h * sp).unwrap_or(u64::MAX));
    let per_copy = l - 1;
    let leftover = |copy: u64| shared.leftover_taken(copy * per_copy, (copy + 1) * per_copy);
    let parameters = one_copy + leftover(0);
    let gradients = one_copy + leftover(1);
    let optimizer_state: u64 = (2..copies).map(|c| one_copy + leftover(c)).sum();
    // ANCHOR_END: model

    // ANCHOR: per_step
    // Checkpointing keeps the output of each of the S − 1 earlier segments of g layers and
    // all g_last activations of the last segment; off, that is one segment of L layers.
    let g = strategy.checkpointing.segment(l);
    let segments = l.div_ceil(g);
    let g_last = l - (segments - 1) * g;
    let kept = segments - 1 + g_last;

    // Gradient accumulation runs micro-batches of about B/k rows; the first is the largest.
    let micro = micro_batches(batch, strategy.accumulation);
    let step = |rows: u64, totals_early: bool| {
        let x = block_bytes(rows * config.inputs * sd);
        let y = block_bytes(rows * F32);
        let act = block_bytes(rows * h * sa);
        let logits = block_bytes(rows * config.classes * sd);
        let stats = block_bytes(rows * 2 * sd);
        let (dlogits, totals) = (logits, MIN_BLOCK);
        // After the kept activations, the busiest moments: the backward pass's first
        // gradient d beside the loss gradient; the logits with the loss terms (the totals
        // already exist from the second micro-batch on); recomputing a segment (its
        // g − 1 inner activations, the one being made and d, beside the checkpoints).
        let early = if totals_early { totals } else { 0 };
        let mut busiest = [
            act + dlogits + totals,
            logits + stats + dlogits + early,
            stats + dlogits + totals,
            0,
        ];
        if segments > 1 && g > 1 {
            busiest[3] = (g + 1 - g_last) * act + totals;
        }
        (x + y, kept * act, busiest.into_iter().max().unwrap_or(0))
    };
    let (input_batch, activations, temporaries) = micro
        .iter()
        .enumerate()
        .map(|(j, &(_, rows))| step(rows, j > 0))
        .max_by_key(|&(x, a, t)| x + a + t)
        .unwrap_or_default();
    // ANCHOR_END: per_step

    // ANCHOR: sum
    let peak_allocated =
        parameters + gradients + optimizer_state + input_batch + activations + temporaries;
    // ANCHOR_END: sum
    Ok(Estimate {
        parameters,
        gradients,
        optimizer_state,
        input_batch,
        activations,
        temporaries,
        peak_allocated,
        parameter_count: config.parameter_count(),
        recomputed_layers: (segments - 1) * (g - 1) * micro.len() as u64,
    })
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, bytes) in self.categories() {
            writeln!(f, "{name:>16}  {:>12}", format_bytes(bytes))?;
        }
        write!(
            f,
            "{:>16}  {:>12}",
            "peak allocated",
            format_bytes(self.peak_allocated)
        )
    }
}

/// Whether every tensor a step allocates per batch row (x, y, logits, activations) is either
/// in the small pool (at most 1 MiB) or at least 10 MiB (20 MiB when hidden weights share
/// 20 MiB segments), with the batch below 1.31 million rows. There the equation is exact: each such tensor gets a block of exactly
/// [`block_bytes`]. In the 1–10 MiB band, tensors share 20 MiB segments and which of them
/// picks up a segment's leftover (at most 1 MiB each) depends on the order of allocations
/// and frees; see [`band_margin`].
pub fn is_exact(config: &MlpConfig, batch: u64) -> bool {
    let p = config.strategy.precision;
    let (sp, sa, sd) = (
        p.parameters().size(),
        p.activations().size(),
        p.data().size(),
    );
    // When hidden weights share 20 MiB segments, those segments' free tails can take a
    // batch tensor of up to 20 MiB too, so the band to avoid widens.
    let shared = config.layers > 1 && {
        let w = config
            .hidden
            .saturating_mul(config.hidden)
            .saturating_mul(sp);
        w > SMALL_SIZE && w < MIN_LARGE_ALLOC
    };
    let band_end = if shared {
        LARGE_BUFFER
    } else {
        MIN_LARGE_ALLOC
    };
    let outside_band = |bytes: u64| bytes <= SMALL_SIZE || bytes >= band_end;
    let per_row = [
        config.inputs * sd,
        F32,
        config.classes * sd,
        2 * sd,
        config.hidden * sa,
    ];
    micro_batches(batch, config.strategy.accumulation)
        .iter()
        .all(|&(_, rows)| {
            per_row
                .iter()
                .all(|&bytes| outside_band(rows.saturating_mul(bytes)))
                && rows.saturating_mul(config.classes.max(2) * sd) < MIN_LARGE_ALLOC
        })
}

/// How far the measured peak can be from the equation outside [`is_exact`]'s domain: one
/// leftover of at most 1 MiB for every tensor alive at the peak.
pub fn band_margin(config: &MlpConfig) -> u64 {
    (config.layers + 6) * SMALL_SIZE
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
/// `capacity` at `batch` rows — the depth the memory equation predicts will fit.
pub fn deepest_that_fits(
    config: &MlpConfig,
    batch: u64,
    capacity: u64,
    max_layers: u64,
) -> Option<u64> {
    // The peak grows with every layer, so the search may double and bisect.
    let fits = |layers: u64| {
        Ok::<_, std::convert::Infallible>(
            estimate(&config.clone().with_layers(layers), batch)
                .is_ok_and(|e| e.peak_allocated <= capacity),
        )
    };
    crate::search::largest_where(max_layers, fits).unwrap_or_else(|never| match never {})
}
