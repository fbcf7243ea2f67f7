//! The numbers behind the charts and the snippets, from the engine itself: the memory
//! equation (`estimate`) and two real training steps on the `plan` backing (`measure_step`),
//! which performs every allocation of a step without running a kernel — so the same numbers
//! come out on every machine, in milliseconds, for cards no machine here has.

use anyhow::{Context, Result, anyhow};
use gpumem::alloc::OutOfMemory;
use gpumem::data::LESSON_TRAINING_EVENTS;
use gpumem::estimate::{Estimate, deepest_that_fits, estimate, estimate_on};
use gpumem::lesson::{CARD_BYTES, Card, planning_on, planning_on_card, planning_unlimited};
use gpumem::measure::{
    Search, StepMemory, deepest_network, largest_batch, largest_where, measure_step, search_largest,
};
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer, Pass};
use gpumem::versions::{DEFAULT_COMPUTE_CAPABILITY, Rules, TorchVersion};
use gpumem::{Device, DeviceOptions};

/// The seed of every measured step (on `plan` it changes nothing; kept fixed all the same).
pub const SEED: u64 = 1;
/// The lesson's hidden width (challenge 1).
pub const LESSON_WIDTH: u64 = 2000;
/// The width and batch of challenge 2's deep networks.
pub const DEEP_WIDTH: u64 = 5000;
pub const DEEP_BATCH: u64 = 32;
/// Challenge 2 never needs more layers than this to run out of memory on the card.
pub const MAX_DEPTH: u64 = 400;
/// No hidden layer of the lesson's network is wider than this on the card (one layer of
/// width `w` at a small batch needs about 300·w bytes).
pub const MAX_WIDTH: u64 = 1 << 28;

pub fn adam() -> Optimizer {
    Optimizer::adam(0.001)
}

/// The lesson's network at `width`, `layers` hidden layers, with `optimizer`.
pub fn network(width: u64, layers: u64, optimizer: Optimizer) -> MlpConfig {
    MlpConfig::lesson(width)
        .with_layers(layers)
        .with_optimizer(optimizer)
}

/// The optimizer's name as the book writes it.
pub fn optimizer_name(o: &Optimizer) -> &'static str {
    match o {
        Optimizer::Sgd { .. } => "SGD",
        Optimizer::Adam { .. } => "Adam",
    }
}

pub fn equation(config: &MlpConfig, batch: u64) -> Result<Estimate> {
    estimate(config, batch).with_context(|| describe(config, batch))
}

pub fn measure(options: &DeviceOptions, config: &MlpConfig, batch: u64) -> Result<StepMemory> {
    measure_step(options, config, batch, SEED).with_context(|| describe(config, batch))
}

fn describe(config: &MlpConfig, batch: u64) -> String {
    format!(
        "{} hidden layer(s) of {} at batch {batch} with {}",
        config.layers,
        config.hidden,
        optimizer_name(&config.optimizer)
    )
}

/// Batch sizes from 1 to the full training set, about `per_decade` per factor of ten,
/// ending exactly on the full set.
pub fn batch_sizes(per_decade: u32) -> Vec<u64> {
    let full = LESSON_TRAINING_EVENTS;
    let steps = (full as f64).log10() * f64::from(per_decade);
    let mut sizes: Vec<u64> = (0..=steps.ceil() as u32)
        .map(|i| 10f64.powf(f64::from(i) / f64::from(per_decade)).round() as u64)
        .filter(|&b| b < full)
        .collect();
    sizes.push(full);
    sizes.dedup();
    sizes
}

/// One training step at every depth, on a device too large to fill: peak allocated and
/// reserved as the network deepens.
#[derive(Debug)]
pub struct DepthCurve {
    pub optimizer: Optimizer,
    /// `(layers, peak allocated, peak reserved)`.
    pub points: Vec<(u64, u64, u64)>,
}

/// Every `every`-th depth from 1 to `max_layers` (the lines are straight: a few points do).
pub fn depth_curve(optimizer: Optimizer, max_layers: u64, every: u64) -> Result<DepthCurve> {
    let depths = (1..=max_layers).filter(|l| (l - 1) % every.max(1) == 0);
    let points = depths
        .map(|layers| {
            let m = measure(
                &planning_unlimited(),
                &network(DEEP_WIDTH, layers, optimizer),
                DEEP_BATCH,
            )?;
            Ok((layers, m.peak_allocated, m.peak_reserved))
        })
        .collect::<Result<_>>()?;
    Ok(DepthCurve { optimizer, points })
}

/// Challenge 2: the deepest network of width 5000 that trains at batch 32 on the card.
#[derive(Debug)]
pub struct DeepestFit {
    pub optimizer: Optimizer,
    /// Measured on the card: the last depth whose step fit.
    pub layers: u64,
    /// Its step.
    pub step: StepMemory,
    /// The first depth that did not fit, and its error.
    pub oom: OutOfMemory,
    /// Where the first failing step ran out: building the model, or a pass of the step.
    pub failed_in: Pass,
    /// The equation's answer: the most layers whose predicted peak allocated fits.
    pub equation_layers: u64,
    /// The equation's peak at the measured depth.
    pub equation_peak: u64,
}

/// Searches the depths with the engine's [`deepest_network`] (doubling, then bisection) and
/// takes the deepest fit and the first failure from its attempts, which always include both
/// neighbours of the boundary.
pub fn deepest_fit(optimizer: Optimizer) -> Result<DeepestFit> {
    deepest_fit_on(Card::Ideal, optimizer)
}

/// [`deepest_fit`] on `card`; the equation's answer with the card's workspaces, in what the
/// card leaves the allocator.
pub fn deepest_fit_on(card: Card, optimizer: Optimizer) -> Result<DeepestFit> {
    // The card's PyTorch runs it: on the lesson's card, 1.12's zeroed gradients and for-loops.
    let base = card.config(&network(DEEP_WIDTH, 1, optimizer));
    let room = card.capacity() - card.outside();
    deepest_fit_with(&planning_on(card), base, optimizer, room)
}

/// [`deepest_fit`] on the ideal card under `version`'s PyTorch, as `--torch VERSION` runs
/// it: its defaults (`zero_grad()`, the optimizer's loop and temporaries) and its workspaces
/// in the allocator (before Hopper).
pub fn deepest_fit_under(version: TorchVersion, optimizer: Optimizer) -> Result<DeepestFit> {
    let rules = Rules::of(version);
    let mut base = network(DEEP_WIDTH, 1, optimizer);
    base.strategy.zero_grad = rules.release.zero_grad;
    base.strategy.optimizer_impl = rules.release.optimizer_impl;
    base.strategy.foreach_denom = rules.release.foreach_denom;
    let mut options = planning_on(Card::Ideal);
    options.cublas = rules.workspaces(DEFAULT_COMPUTE_CAPABILITY);
    let room = Card::Ideal.capacity() - Card::Ideal.outside();
    deepest_fit_with(&options, base, optimizer, room)
}

/// The deepest `base` (deepened) that trains on `options`' card, and the equation's answer
/// with its workspaces in `room`, what the card leaves the allocator.
fn deepest_fit_with(
    options: &DeviceOptions,
    base: MlpConfig,
    optimizer: Optimizer,
    room: u64,
) -> Result<DeepestFit> {
    let search = deepest_network(options, &base, DEEP_BATCH, MAX_DEPTH)
        .with_context(|| describe(&base, DEEP_BATCH))?;
    let layers = search
        .best
        .ok_or_else(|| anyhow!("not even one hidden layer of {DEEP_WIDTH} fits"))?;
    if layers == MAX_DEPTH {
        return Err(anyhow!(
            "{MAX_DEPTH} hidden layers of {DEEP_WIDTH} still fit on the card: raise MAX_DEPTH"
        ));
    }
    let step = attempt(&search, layers)?.clone();
    let next = attempt(&search, layers + 1)?;
    let oom = next
        .oom
        .clone()
        .ok_or_else(|| anyhow!("memory does not grow with depth here: {layers} layers"))?;
    Ok(DeepestFit {
        optimizer,
        layers,
        equation_peak: estimate_on(
            &base.clone().with_layers(layers),
            DEEP_BATCH,
            options.cublas,
        )
        .with_context(|| describe(&base, DEEP_BATCH))?
        .peak_allocated,
        step,
        oom,
        failed_in: next
            .failed_in
            .ok_or_else(|| anyhow!("an out-of-memory error without its pass"))?,
        equation_layers: deepest_that_fits(&base, DEEP_BATCH, room, MAX_DEPTH, options.cublas)
            .unwrap_or(0),
    })
}

/// What a search measured at `n` (an error if it did not try `n`).
fn attempt(search: &Search, n: u64) -> Result<&StepMemory> {
    search
        .attempts
        .iter()
        .find(|(tried, _)| *tried == n)
        .map(|(_, m)| m)
        .ok_or_else(|| anyhow!("the search did not try {n}"))
}

/// Challenge 1: the largest batch of the lesson's network whose step fits on the card, and
/// that step, found by the engine's [`largest_batch`].
#[derive(Debug)]
pub struct LargestBatch {
    pub rows: u64,
    pub step: StepMemory,
}

pub fn largest_batch_on_card(width: u64) -> Result<Option<LargestBatch>> {
    largest_batch_on(Card::Ideal, width)
}

/// [`largest_batch_on_card`] on `card`.
pub fn largest_batch_on(card: Card, width: u64) -> Result<Option<LargestBatch>> {
    let config = card.config(&MlpConfig::lesson(width));
    let search = largest_batch(&planning_on(card), &config, LESSON_TRAINING_EVENTS)
        .with_context(|| describe(&config, LESSON_TRAINING_EVENTS))?;
    search
        .best
        .map(|rows| {
            Ok(LargestBatch {
                rows,
                step: attempt(&search, rows)?.clone(),
            })
        })
        .transpose()
}

/// The widest hidden layers that fit on the card at `batch` rows with `layers` of them
/// (the engine's [`search_largest`] over widths).
pub fn widest_on_card(layers: u64, batch: u64) -> Result<Option<u64>> {
    let search = search_largest(MAX_WIDTH, |w| {
        measure_step(
            &planning_on_card(),
            &network(w, layers, Optimizer::LESSON),
            batch,
            SEED,
        )
    })
    .with_context(|| format!("the widest of {layers} hidden layer(s) at batch {batch}"))?;
    Ok(search.best)
}

/// The widest hidden layers whose predicted peak allocated fits on the card.
pub fn widest_by_equation(layers: u64, batch: u64) -> Result<Option<u64>> {
    largest_where(MAX_WIDTH, |w| {
        Ok(equation(&network(w, layers, Optimizer::LESSON), batch)?.peak_allocated <= CARD_BYTES)
    })
}

/// The allocator's events over model creation and a few training steps.
#[derive(Debug)]
pub struct Timeline {
    pub config: MlpConfig,
    pub batch: u64,
    /// Every event, model creation and steps one after the other.
    pub trace: gpumem::alloc::Trace,
    /// `(allocated, reserved)` after each event.
    pub events: Vec<(u64, u64)>,
    /// Where each phase starts (an index into `events`) and its name.
    pub phases: Vec<(usize, String)>,
}

/// Records the allocator's trace on a `plan` device of the lesson's card while `config` is
/// built and trained for `steps` steps of `batch` rows.
pub fn timeline(config: &MlpConfig, batch: u64, steps: u32) -> Result<Timeline> {
    let device = Device::new(&planning_on_card())?;
    let mut trace = gpumem::alloc::Trace::default();
    let mut phases = Vec::new();
    let mut record = |name: String, part: gpumem::alloc::Trace| {
        phases.push((trace.events.len(), name));
        trace.events.extend(part.events);
    };
    device.start_trace();
    let mut mlp = Mlp::new(&device, config, SEED)?;
    record("model".into(), device.take_trace());
    for step in 1..=steps {
        device.start_trace();
        mlp.train_step(Batch::Planned(batch))?;
        record(format!("step {step}"), device.take_trace());
    }
    let events = trace
        .events
        .iter()
        .map(|e| (e.allocated, e.reserved))
        .collect();
    Ok(Timeline {
        config: config.clone(),
        batch,
        trace,
        events,
        phases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_span_one_row_to_the_full_set() {
        let b = batch_sizes(8);
        assert_eq!(b.first(), Some(&1));
        assert_eq!(b.last(), Some(&LESSON_TRAINING_EVENTS));
        assert!(b.windows(2).all(|w| w[0] < w[1]));
    }
}
