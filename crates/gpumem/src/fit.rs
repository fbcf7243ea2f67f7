//! Fitting a step on a card with the memory-saving strategies: plan an update with any number
//! of micro-batches quickly, find the fewest micro-batches that fit, and pick the cheapest
//! combination of strategies that fits.
//!
//! "Cheapest" is an order on [`Cost`], compared field by field:
//!
//! 1. **fewest micro-batches per update** — each one is a separate forward and backward pass
//!    that waits for the previous one; small micro-batches leave a GPU idle and every pass
//!    pays its launch overhead;
//! 2. **fewest recomputed layers** — activation checkpointing computes them twice: extra
//!    arithmetic;
//! 3. **float32 before mixed precision** — mixed precision costs no time on hardware with
//!    fast 16-bit arithmetic, but it changes the numbers (float16 activations, loss scaling);
//! 4. **least peak memory**.

use crate::device::{Backend, Device, DeviceOptions};
use crate::error::Error;
use crate::estimate::{StepSetup, estimate};
use crate::measure::{StepMemory, measure_step};
use crate::mlp::{Checkpointing, MlpConfig, Precision, Strategy};

/// The order of [`Cost`] in one line, for reports.
pub const CHEAPEST_RULE: &str = "the fewest micro-batches per update (each is a pass that waits \
    for the previous one), then the fewest recomputed layers (extra arithmetic), then float32 \
    before mixed precision (which changes the numbers), then the least memory";

/// Up to this many micro-batches, [`measure_update`] plans every one of them.
const PLAN_ALL_UP_TO: u64 = 8;

/// [`measure_step`] for one optimizer update, in time independent of the number of
/// micro-batches on the `plan` backing.
///
/// With more than a few micro-batches, only the first two of each step and the last are
/// planned (the last because the loop keeps its `y_pred` and loss through the update): the
/// first is the largest (the engine's micro-batches differ by at most one row, longest
/// first) and the second is the first to add its gradients into existing ones while the
/// first's `y_pred` and loss are still alive. Every later micro-batch repeats the second's
/// allocations with at most as many rows, served from the blocks the second freed, so the
/// peaks — allocated and reserved — are those of the first two. (A test checks
/// this against planning every micro-batch.) On backings that execute, every micro-batch
/// runs.
pub fn measure_update(
    options: &DeviceOptions,
    config: &MlpConfig,
    batch: u64,
    seed: u64,
) -> Result<StepMemory, Error> {
    let parts = parts(batch, config.strategy.accumulation);
    if options.backend != Backend::Plan || parts <= PLAN_ALL_UP_TO {
        return measure_step(options, config, batch, seed);
    }
    // The whole batch is uploaded (the micro-batches are views of it); only the first two
    // micro-batches of each step are planned.
    let device = Device::new(options)?;
    let setup = StepSetup::from_rows(config, batch)?;
    crate::measure::measure_steps(&device, &setup, seed, Some(2), &mut || {})
}

/// How many micro-batches the engine makes of `batch` rows when asked for `asked`.
fn parts(batch: u64, asked: u64) -> u64 {
    asked.clamp(1, batch.max(1))
}

/// `config` with `micro_batches` micro-batches per update.
pub fn with_micro_batches(config: &MlpConfig, micro_batches: u64) -> MlpConfig {
    let mut c = config.clone();
    c.strategy.accumulation = micro_batches;
    c
}

/// The fewest micro-batches (keeping `config`'s precision and checkpointing) with which one
/// update of `batch` rows fits the card of `card` (planned with [`measure_update`]; use the
/// `plan` backing), and what that update measured; `None` if not even one row per
/// micro-batch fits. Assumes more micro-batches never need more memory.
pub fn fewest_micro_batches(
    card: &DeviceOptions,
    config: &MlpConfig,
    batch: u64,
) -> Result<Option<(u64, StepMemory)>, Error> {
    let probe = |k: u64| measure_update(card, &with_micro_batches(config, k), batch, 0);
    let first = probe(1)?;
    if first.fits() {
        return Ok(Some((1, first)));
    }
    // More than `batch` micro-batches change nothing: the engine makes at most one per row.
    let most = probe(batch)?;
    if !most.fits() {
        return Ok(None);
    }
    // Double until it fits, then bisect between the last failure and the first fit.
    let (mut bad, mut good) = (1u64, None);
    while good.is_none() {
        let k = bad.saturating_mul(2).min(batch);
        let m = if k == batch { most.clone() } else { probe(k)? };
        if m.fits() {
            good = Some((k, m));
        } else {
            bad = k;
        }
    }
    let (mut good_k, mut good_m) = good.expect("the loop ends with a fit");
    while good_k - bad > 1 {
        let mid = bad + (good_k - bad) / 2;
        let m = probe(mid)?;
        if m.fits() {
            (good_k, good_m) = (mid, m);
        } else {
            bad = mid;
        }
    }
    Ok(Some((good_k, good_m)))
}

/// Whether checkpointing with `checkpointing` changes the step of a network of `layers`
/// hidden layers: it needs at least two segments of at least two layers (a single hidden
/// layer, or segments of one layer, keep every activation anyway).
pub fn checkpointing_has_effect(checkpointing: Checkpointing, layers: u64) -> bool {
    let g = checkpointing.segment(layers);
    checkpointing != Checkpointing::Off && g > 1 && g < layers
}

/// What a strategy costs, in the order "cheapest" compares (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Cost {
    /// Micro-batches per optimizer update (gradient accumulation); 1 without.
    pub micro_batches: u64,
    /// Hidden layers computed a second time per update (activation checkpointing).
    pub recomputed_layers: u64,
    /// Whether activations are stored in 16 bits (mixed precision).
    pub reduced_precision: bool,
    /// `max_memory_allocated()` of the update.
    pub peak_allocated: u64,
}

impl Cost {
    /// The cost of `config` at `batch` rows, whose update peaked at `peak_allocated`.
    pub fn of(config: &MlpConfig, batch: u64, peak_allocated: u64) -> Result<Cost, Error> {
        let micro_batches = parts(batch, config.strategy.accumulation);
        // Every micro-batch recomputes the same layers: count them on one.
        let one = estimate(
            &with_micro_batches(config, 1),
            batch.div_ceil(micro_batches),
        )?;
        Ok(Cost {
            micro_batches,
            recomputed_layers: one.recomputed_layers * micro_batches,
            reduced_precision: config.strategy.precision == Precision::Mixed,
            peak_allocated,
        })
    }

    /// Recomputed layers as a fraction of one full forward pass (every hidden layer over
    /// every row) of a network of `layers` hidden layers.
    pub fn extra_forward_passes(&self, layers: u64) -> f64 {
        self.recomputed_layers as f64 / (layers.max(1) * self.micro_batches.max(1)) as f64
    }
}

/// A strategy that fits, with its cost and what its update measured on the card.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Fit {
    pub strategy: Strategy,
    pub cost: Cost,
    pub memory: StepMemory,
}

/// For every precision in `precisions`, with and without `checkpointing` (where it has an
/// effect), the fewest micro-batches that fit the card of `card`: each combination that can
/// fit, with its cost. `config`'s own strategy is ignored.
pub fn fitting_strategies(
    card: &DeviceOptions,
    config: &MlpConfig,
    batch: u64,
    checkpointing: Checkpointing,
    precisions: &[Precision],
) -> Result<Vec<Fit>, Error> {
    let mut spacings = vec![Checkpointing::Off];
    if checkpointing_has_effect(checkpointing, config.layers) {
        spacings.push(checkpointing);
    }
    let mut fits = Vec::new();
    for &precision in precisions {
        for &checkpointing in &spacings {
            let c = config.clone().with_strategy(Strategy {
                precision,
                accumulation: 1,
                checkpointing,
                ..config.strategy
            });
            if let Some((k, memory)) = fewest_micro_batches(card, &c, batch)? {
                let c = with_micro_batches(&c, k);
                fits.push(Fit {
                    strategy: c.strategy,
                    cost: Cost::of(&c, batch, memory.peak_allocated)?,
                    memory,
                });
            }
        }
    }
    Ok(fits)
}

/// The cheapest of `fits` (see [`Cost`]).
pub fn cheapest(fits: &[Fit]) -> Option<&Fit> {
    fits.iter().min_by_key(|f| f.cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::LESSON_TRAINING_EVENTS as FULL;
    use crate::lesson::{planning_device as plan, planning_on_card, planning_unlimited};
    use crate::mlp::Optimizer;

    fn strategy(precision: Precision, accumulation: u64, checkpointing: Checkpointing) -> Strategy {
        Strategy {
            precision,
            accumulation,
            checkpointing,
            ..Default::default()
        }
    }

    #[test]
    fn planning_the_first_two_micro_batches_gives_the_peaks_of_all() {
        let setups = [
            (MlpConfig::lesson(2000), 100_003),
            (MlpConfig::lesson(300).with_layers(5), 77_777),
            (
                MlpConfig::lesson(64)
                    .with_layers(9)
                    .with_optimizer(Optimizer::adam(0.01)),
                5_001,
            ),
            (MlpConfig::lesson(1000).with_layers(3), 4_099),
        ];
        for (config, batch) in setups {
            for precision in [Precision::Float32, Precision::Mixed, Precision::Float64] {
                for ck in [
                    Checkpointing::Off,
                    Checkpointing::Sqrt,
                    Checkpointing::Every(2),
                ] {
                    for k in [9, 31] {
                        let c = config.clone().with_strategy(strategy(precision, k, ck));
                        let full = measure_step(&planning_unlimited(), &c, batch, 0).unwrap();
                        let fast = measure_update(&planning_unlimited(), &c, batch, 0).unwrap();
                        let what = format!("{c:?} at {batch}");
                        assert_eq!(fast.peak_requested, full.peak_requested, "{what}");
                        // Blocks: equal where the equation is exact; in the 1–10 MiB band a
                        // later, one-row-shorter micro-batch may land in a block cut
                        // differently.
                        if crate::estimate::is_exact(&c, batch) {
                            assert_eq!(fast.peak_allocated, full.peak_allocated, "{what}");
                            assert_eq!(fast.peak_reserved, full.peak_reserved, "{what}");
                        } else {
                            let margin = crate::estimate::band_margin(&c);
                            assert!(
                                fast.peak_allocated.abs_diff(full.peak_allocated) <= margin,
                                "{what}"
                            );
                            assert!(
                                fast.peak_reserved.abs_diff(full.peak_reserved) <= margin,
                                "{what}"
                            );
                        }
                        // On a card just large enough for the full plan, both fit; just
                        // too small, both fail.
                        for card in [full.peak_reserved, full.peak_allocated - 1] {
                            let a = measure_step(&plan(card), &c, batch, 0).unwrap().fits();
                            let b = measure_update(&plan(card), &c, batch, 0).unwrap().fits();
                            assert_eq!(a, b, "{what} on {card}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_fewest_micro_batches_are_the_fewest() {
        let card = plan(4 << 30);
        for (config, batch) in [
            (MlpConfig::lesson(2000), FULL),
            (MlpConfig::lesson(1000).with_layers(6), 300_001),
        ] {
            let (k, m) = fewest_micro_batches(&card, &config, batch)
                .unwrap()
                .unwrap();
            assert!(k > 1 && m.fits(), "{k}");
            let fewer = with_micro_batches(&config, k - 1);
            assert!(!measure_step(&card, &fewer, batch, 0).unwrap().fits());
            let c = with_micro_batches(&config, k);
            assert!(measure_step(&card, &c, batch, 0).unwrap().fits());
        }
        // A model larger than the card never fits, however small the micro-batches.
        let huge = MlpConfig::lesson(20_000).with_layers(4);
        assert!(
            fewest_micro_batches(&plan(1 << 30), &huge, 1000)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_lessons_full_batch_fits_cheapest_with_mixed_precision() {
        let card = planning_on_card();
        let config = MlpConfig::lesson(2000);
        let all = [Precision::Float32, Precision::Mixed];
        let fits = fitting_strategies(&card, &config, FULL, Checkpointing::Sqrt, &all).unwrap();
        // One hidden layer: checkpointing has nothing to drop, so only two families.
        assert_eq!(fits.len(), 2);
        let best = cheapest(&fits).unwrap();
        assert_eq!(
            best.strategy,
            strategy(Precision::Mixed, 1, Checkpointing::Off)
        );
        let f32_only = fitting_strategies(
            &card,
            &config,
            FULL,
            Checkpointing::Sqrt,
            &[Precision::Float32],
        )
        .unwrap();
        let best32 = cheapest(&f32_only).unwrap();
        // One micro-batch fewer runs out — with allocated bytes that would fit: the backward
        // pass finds the cache fragmented (small tensors cut out of a cached B × H block).
        let k = best32.strategy.accumulation;
        assert!(k > 1 && best32.memory.fits());
        let fewer = measure_update(&card, &with_micro_batches(&config, k - 1), FULL, 0).unwrap();
        let oom = fewer.oom.expect("one micro-batch fewer runs out");
        assert!(
            oom.allocated + oom.requested <= oom.capacity.unwrap_or(0),
            "{oom}"
        );
        assert_eq!(best32.cost.recomputed_layers, 0);
    }

    #[test]
    fn costs_order_micro_batches_then_recomputation_then_precision() {
        let c = |micro_batches, recomputed_layers, reduced_precision| Cost {
            micro_batches,
            recomputed_layers,
            reduced_precision,
            peak_allocated: 0,
        };
        assert!(c(1, 9, true) < c(2, 0, false));
        assert!(c(1, 0, true) < c(1, 3, false));
        assert!(c(1, 3, false) < c(1, 3, true));
        let deep = MlpConfig::lesson(8).with_layers(16).with_strategy(strategy(
            Precision::Float32,
            2,
            Checkpointing::Sqrt,
        ));
        let cost = Cost::of(&deep, 100, 0).unwrap();
        // Segments of 4: the 3 earlier segments are computed again whole (PyTorch's
        // non-reentrant checkpoint recomputes the segment, its last layer too), per
        // micro-batch.
        assert_eq!(cost.recomputed_layers, 24);
        assert!((cost.extra_forward_passes(16) - 12.0 / 16.0).abs() < 1e-12);
        assert!(!checkpointing_has_effect(Checkpointing::Sqrt, 1));
        assert!(!checkpointing_has_effect(Checkpointing::Sqrt, 2));
        assert!(!checkpointing_has_effect(Checkpointing::Every(1), 8));
        assert!(checkpointing_has_effect(Checkpointing::Sqrt, 3));
    }
}
