//! The demo's measurements: every strategy planned at full size, timed on a sample, and the
//! sources' claims (float32 vs float64, mixed precision) checked against the engine.

use anyhow::Context;
use gpumem::data::{Dataset, epoch_batches, rng};
use gpumem::device::{DeviceOptions, Error};
use gpumem::estimate::{Estimate, estimate};
use gpumem::fit::{
    Cost, Fit, checkpointing_has_effect, fewest_micro_batches, fitting_strategies, measure_update,
};
use gpumem::measure::StepMemory;
use gpumem::mlp::{Batch, Checkpointing, Mlp, MlpConfig, Optimizer, Precision, Strategy};
use gpumem::size::{MemorySpec, format_bytes};
use gpumem::train::BatchSize;
use gpumem::{Backend, Device};
use serde::Serialize;
use std::time::{Duration, Instant};

/// A card too large to run out: for what a step needs.
const UNLIMITED: u64 = 1 << 56;

/// `--accumulation`: a number of micro-batches, or the fewest that fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulation {
    Auto,
    Steps(u64),
}

/// Plans updates on the `plan` backing: on the card, and on a card too large to run out.
pub struct Planner {
    card: u64,
}

impl Planner {
    pub fn new(card: u64) -> Planner {
        Planner { card }
    }

    fn options(bytes: u64) -> DeviceOptions {
        DeviceOptions {
            backend: Backend::Plan,
            memory: MemorySpec::Bytes(bytes),
            ..Default::default()
        }
    }

    /// The card, as the plan backing's options.
    pub fn card(&self) -> DeviceOptions {
        Self::options(self.card)
    }

    /// One update on the card, and what it needs (its peaks on a card that never runs out).
    pub fn measure(
        &self,
        config: &MlpConfig,
        rows: u64,
    ) -> Result<(StepMemory, StepMemory), Error> {
        let on_card = measure_update(&self.card(), config, rows, 0)?;
        let needs = if on_card.fits() {
            on_card.clone()
        } else {
            measure_update(&Self::options(UNLIMITED), config, rows, 0)?
        };
        Ok((on_card, needs))
    }

    /// The planned peak allocated of one update on a card that never runs out.
    pub fn needs(&self, config: &MlpConfig, rows: u64) -> Result<u64, Error> {
        Ok(measure_update(&Self::options(UNLIMITED), config, rows, 0)?.peak_allocated)
    }
}

fn with(base: &MlpConfig, precision: Precision, accumulation: u64, ck: Checkpointing) -> MlpConfig {
    base.clone().with_strategy(Strategy {
        precision,
        accumulation,
        checkpointing: ck,
    })
}

/// The micro-batches the accumulating rows use: `--accumulation K`, or the fewest with which
/// accumulation alone fits (else with everything else on too), at least 2 so that the rows
/// accumulate.
pub fn micro_batches(
    plan: &Planner,
    base: &MlpConfig,
    rows: u64,
    start: Precision,
    accumulation: Accumulation,
    checkpointing: Checkpointing,
) -> Result<u64, Error> {
    if let Accumulation::Steps(k) = accumulation {
        return Ok(k);
    }
    let alone = with(base, start, 1, Checkpointing::Off);
    let all = with(base, Precision::Mixed, 1, checkpointing);
    for config in [alone, all] {
        if let Some((k, _)) = fewest_micro_batches(&plan.card(), &config, rows)? {
            return Ok(k.max(2).min(rows.max(1)));
        }
    }
    Ok(2.min(rows.max(1)))
}

/// What a timing run measured, or why it could not run.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    pub backend: Backend,
    /// Mean wall time of an epoch's training steps (not the evaluation).
    pub seconds_per_epoch: Option<f64>,
    /// `seconds_per_epoch` over the plain run's.
    pub relative_to_none: Option<f64>,
    /// Mean loss over the last epoch's training rows.
    pub train_loss: Option<f32>,
    pub validation_loss: Option<f32>,
    pub validation_accuracy: Option<f32>,
    /// Hidden layers recomputed over the whole run (checkpointing), as the step counted them.
    pub recomputed_layers: u64,
    /// Why the run did not happen (e.g. no float16 kernels on this backing).
    pub not_measured: Option<String>,
}

impl Timing {
    fn not_measured(backend: Backend, why: String) -> Timing {
        Timing {
            backend,
            seconds_per_epoch: None,
            relative_to_none: None,
            train_loss: None,
            validation_loss: None,
            validation_accuracy: None,
            recomputed_layers: 0,
            not_measured: Some(why),
        }
    }
}

/// The sample the timing runs train on.
pub struct Sample {
    pub rows: u64,
    pub batch: BatchSize,
    pub epochs: u64,
    seed: u64,
    data: Dataset,
}

impl Sample {
    pub fn new(rows: u64, batch: BatchSize, epochs: u64, seed: u64) -> Sample {
        Sample {
            rows,
            batch,
            epochs,
            seed,
            data: Dataset::generate(rows, seed),
        }
    }

    /// Rows per batch on the sample (the whole sample for `full`).
    pub fn batch_rows(&self) -> u64 {
        self.batch.resolve(self.rows).0
    }

    /// Trains `strategy` on the sample on a fresh device of `options` and times it.
    pub fn time(
        &self,
        options: &DeviceOptions,
        base: &MlpConfig,
        strategy: Strategy,
    ) -> anyhow::Result<Timing> {
        let backend = options.backend;
        match self.train(options, &base.clone().with_strategy(strategy)) {
            Ok(t) => Ok(t),
            Err(Error::OutOfMemory(o)) => Ok(Timing::not_measured(
                backend,
                format!(
                    "out of memory even at the sample size (tried to allocate {})",
                    format_bytes(o.tried)
                ),
            )),
            // An adapter without SHADER_F64 cannot run float64: say so in the row rather
            // than failing the demo.
            Err(e @ Error::Unsupported(_)) => Ok(Timing::not_measured(backend, e.to_string())),
            Err(e) => Err(e).with_context(|| format!("timing {strategy:?} on {backend}")),
        }
    }

    /// One untimed step of the plain setup (errors are left to the timed runs to report).
    pub fn warm_up(&self, options: &DeviceOptions, base: &MlpConfig) {
        let indices: Vec<usize> = (0..self.batch_rows() as usize).collect();
        let part = self.data.train.gather(&indices);
        let _ = Device::new(options)
            .and_then(|d| Mlp::new(&d, base, self.seed))
            .and_then(|mut m| m.train_step(Batch::Data(&part)));
    }

    fn train(&self, options: &DeviceOptions, config: &MlpConfig) -> Result<Timing, Error> {
        let device = Device::new(options)?;
        let mut mlp = Mlp::new(&device, config, self.seed)?;
        let mut shuffle = rng(self.seed);
        let (mut busy, mut loss, mut seen, mut recomputed) = (Duration::ZERO, 0f64, 0u64, 0u64);
        for _ in 0..self.epochs {
            (loss, seen) = (0.0, 0);
            let batches =
                epoch_batches(self.rows as usize, self.batch_rows() as usize, &mut shuffle);
            for indices in batches {
                let part = self.data.train.gather(&indices);
                let start = Instant::now();
                let r = mlp.train_step(Batch::Data(&part))?;
                busy += start.elapsed();
                loss += f64::from(r.loss.unwrap_or(f32::NAN)) * r.rows as f64;
                seen += r.rows;
                recomputed += r.recomputed_layers;
            }
        }
        let (validation_loss, validation_accuracy) = if self.data.validation.is_empty() {
            (None, None)
        } else {
            let (l, a) = mlp.evaluate(&self.data.validation, 4096)?;
            (Some(l), Some(a))
        };
        Ok(Timing {
            backend: options.backend,
            seconds_per_epoch: Some(busy.as_secs_f64() / self.epochs as f64),
            relative_to_none: None,
            train_loss: Some((loss / seen.max(1) as f64) as f32),
            validation_loss,
            validation_accuracy,
            recomputed_layers: recomputed,
            not_measured: None,
        })
    }
}

/// One line of the demo's table: a strategy, what it needs at full size, and how it ran on
/// the sample.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub name: String,
    pub strategy: Strategy,
    pub micro_batches: u64,
    /// Rows of the largest micro-batch.
    pub micro_batch_rows: u64,
    /// `max_memory_allocated()` of one update at full size (planned on a card that never
    /// runs out).
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    /// Whether the update fits the card (planned on the card).
    pub fits: bool,
    /// Where it ran out, if it did not fit.
    pub out_of_memory: Option<String>,
    /// Hidden layers computed twice per update (checkpointing).
    pub recomputed_layers: u64,
    /// `recomputed_layers` as a fraction of one full forward pass.
    pub extra_forward_passes: f64,
    /// False where checkpointing was asked for but has nothing to drop.
    pub checkpointing_has_effect: bool,
    pub timing: Option<Timing>,
}

impl Row {
    /// A row for `strategy`, not planned yet ([`Row::plan`]).
    pub fn new(name: &str, strategy: Strategy) -> Row {
        Row {
            name: name.to_string(),
            strategy,
            micro_batches: strategy.accumulation,
            micro_batch_rows: 0,
            peak_allocated: 0,
            peak_reserved: 0,
            fits: false,
            out_of_memory: None,
            recomputed_layers: 0,
            extra_forward_passes: 0.0,
            checkpointing_has_effect: true,
            timing: None,
        }
    }

    /// Plans the row's update of `rows` rows.
    pub fn plan(&mut self, plan: &Planner, base: &MlpConfig, rows: u64) -> Result<(), Error> {
        let config = base.clone().with_strategy(self.strategy);
        let (on_card, needs) = plan.measure(&config, rows)?;
        let cost = Cost::of(&config, rows, needs.peak_allocated)?;
        self.micro_batches = cost.micro_batches;
        self.micro_batch_rows = rows.div_ceil(cost.micro_batches);
        self.peak_allocated = needs.peak_allocated;
        self.peak_reserved = needs.peak_reserved;
        self.fits = on_card.fits();
        self.out_of_memory = on_card.oom.as_ref().map(|o| {
            format!(
                "tried to allocate {} for `{}` with {} of the card already reserved",
                format_bytes(o.tried),
                o.label,
                format_bytes(o.reserved)
            )
        });
        self.recomputed_layers = cost.recomputed_layers;
        self.extra_forward_passes = cost.extra_forward_passes(base.layers);
        self.checkpointing_has_effect = self.strategy.checkpointing == Checkpointing::Off
            || checkpointing_has_effect(self.strategy.checkpointing, base.layers);
        Ok(())
    }

    /// The strategy as it runs: checkpointing that has no effect is the same step as none.
    pub fn effective(&self, base: &MlpConfig) -> Strategy {
        let mut s = self.strategy;
        if !checkpointing_has_effect(s.checkpointing, base.layers) {
            s.checkpointing = Checkpointing::Off;
        }
        s
    }

    pub fn memory_cells(&self) -> Vec<String> {
        vec![
            self.display_name(),
            format!("{} × {}", self.micro_batches, self.micro_batch_rows),
            format_bytes(self.peak_allocated),
            if self.fits { "yes" } else { "no" }.to_string(),
            self.recomputed_layers.to_string(),
            if self.recomputed_layers == 0 {
                "0".to_string()
            } else {
                format!("{:.2}", self.extra_forward_passes)
            },
        ]
    }

    /// The name, marked `*` where checkpointing has nothing to drop.
    pub fn display_name(&self) -> String {
        if self.checkpointing_has_effect {
            self.name.clone()
        } else {
            format!("{} *", self.name)
        }
    }

    pub fn time_cells(&self) -> Vec<String> {
        let name = self.display_name();
        let dash = || "—".to_string();
        let Some(t) = &self.timing else {
            return vec![name, dash(), dash(), dash(), dash()];
        };
        if let Some(why) = &t.not_measured {
            return vec![name, format!("not measured: {why}"), dash(), dash(), dash()];
        }
        let opt = |v: Option<String>| v.unwrap_or_else(dash);
        vec![
            name,
            opt(t.seconds_per_epoch.map(|s| format!("{s:.3} s"))),
            opt(t.relative_to_none.map(|r| format!("×{r:.2}"))),
            opt(t.validation_loss.map(|l| format!("{l:.5}"))),
            opt(t.validation_accuracy.map(|a| format!("{:.1} %", 100.0 * a))),
        ]
    }
}

/// `float32`, `mixed precision`, `float64`.
pub fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Float32 => "float32",
        Precision::Mixed => "mixed precision",
        Precision::Float64 => "float64",
    }
}

/// Every strategy alone and combined, on top of the starting precision `start`.
pub fn rows(base: &MlpConfig, start: Precision, k: u64, ck: Checkpointing) -> Vec<Row> {
    let other = match start {
        Precision::Float64 => Precision::Float32,
        _ => Precision::Float64,
    };
    let mixed = Precision::Mixed;
    let off = Checkpointing::Off;
    let s = |precision, accumulation, checkpointing| Strategy {
        precision,
        accumulation,
        checkpointing,
    };
    let segment = match ck {
        Checkpointing::Sqrt => format!("⌈√{}⌉ = {}", base.layers, ck.segment(base.layers)),
        c => c.segment(base.layers).to_string(),
    };
    let acc = format!("accumulation ×{k}");
    let chk = format!("checkpointing, segments of {segment}");
    let mut rows = vec![
        Row::new(
            &format!("none ({})", precision_name(start)),
            s(start, 1, off),
        ),
        Row::new(precision_name(other), s(other, 1, off)),
        Row::new("mixed precision", s(mixed, 1, off)),
        Row::new(&acc, s(start, k, off)),
        Row::new(&chk, s(start, 1, ck)),
        Row::new(&format!("mixed + {acc}"), s(mixed, k, off)),
        Row::new("mixed + checkpointing", s(mixed, 1, ck)),
        Row::new(&format!("{acc} + checkpointing"), s(start, k, ck)),
        Row::new("all three", s(mixed, k, ck)),
    ];
    if start == Precision::Float64 {
        rows[1].name = "float32 instead of float64".into();
    }
    rows
}

/// The cheapest combinations that fit the card, by the engine's order (`gpumem::fit`).
#[derive(Debug, Clone)]
pub struct Cheapest {
    /// Among float32 and mixed precision, with accumulation and checkpointing (segments of
    /// `ck`): none if nothing fits.
    pub best: Option<Fit>,
    /// The same, keeping float32 (it may be `best`).
    pub float32: Option<Fit>,
}

/// The cheapest combination of strategies with which an update of `rows` rows fits the card,
/// and the cheapest that keeps float32.
pub fn cheapest(
    plan: &Planner,
    base: &MlpConfig,
    rows: u64,
    ck: Checkpointing,
) -> Result<Cheapest, Error> {
    let reduced = [Precision::Float32, Precision::Mixed];
    let fits = fitting_strategies(&plan.card(), base, rows, ck, &reduced)?;
    let float32: Vec<Fit> = fits
        .iter()
        .filter(|f| f.strategy.precision == Precision::Float32)
        .cloned()
        .collect();
    Ok(Cheapest {
        best: gpumem::fit::cheapest(&fits).cloned(),
        float32: gpumem::fit::cheapest(&float32).cloned(),
    })
}

/// Fills in each row's time relative to the plain run's.
pub fn relative_times(rows: &mut [Row]) {
    let none = rows
        .first()
        .and_then(|r| r.timing.as_ref())
        .and_then(|t| t.seconds_per_epoch)
        .filter(|s| *s > 0.0);
    for row in rows {
        if let (Some(t), Some(none)) = (row.timing.as_mut(), none) {
            t.relative_to_none = t.seconds_per_epoch.map(|s| s / none);
        }
    }
}

/// A strategy in words, e.g. `mixed precision, 1 micro-batch of 1173000 rows, no
/// checkpointing`.
pub fn describe(strategy: &Strategy, base: &MlpConfig, rows: u64) -> String {
    let k = strategy.accumulation.clamp(1, rows.max(1));
    let ck = if checkpointing_has_effect(strategy.checkpointing, base.layers) {
        format!(
            "checkpoints every {} layers",
            strategy.checkpointing.segment(base.layers)
        )
    } else {
        "no checkpointing".to_string()
    };
    format!(
        "{}, {k} micro-batch{} of {} rows, {ck}",
        precision_name(strategy.precision),
        if k == 1 { "" } else { "es" },
        rows.div_ceil(k)
    )
}

/// A fit as JSON, with its description.
pub fn fit_json(fit: &Fit, base: &MlpConfig, rows: u64) -> serde_json::Value {
    serde_json::json!({
        "description": describe(&fit.strategy, base, rows),
        "strategy": fit.strategy,
        "micro_batch_rows": rows.div_ceil(fit.cost.micro_batches),
        "peak_allocated": fit.memory.peak_allocated,
        "peak_reserved": fit.memory.peak_reserved,
        "recomputed_layers": fit.cost.recomputed_layers,
        "extra_forward_passes": fit.cost.extra_forward_passes(base.layers),
        "cost": fit.cost,
    })
}

/// The memory equation's terms of one update, and the planned peak.
#[derive(Debug, Clone, Serialize)]
pub struct Terms {
    pub estimate: Estimate,
    /// `max_memory_allocated()` of the update planned on the plan backing.
    pub planned_peak: u64,
}

impl Terms {
    fn of(plan: &Planner, config: &MlpConfig, rows: u64) -> Result<Terms, Error> {
        Ok(Terms {
            estimate: estimate(config, rows)?,
            planned_peak: plan.needs(config, rows)?,
        })
    }

    fn named(&self) -> [(&'static str, u64); 7] {
        let [a, b, c, d, e, f] = self.estimate.categories();
        [a, b, c, d, e, f, ("peak (planned)", self.planned_peak)]
    }
}

fn ratio(a: u64, b: u64) -> String {
    if b == 0 {
        "—".into()
    } else {
        format!("×{:.2}", a as f64 / b as f64)
    }
}

fn compare_cells(a: &Terms, b: &Terms) -> Vec<Vec<String>> {
    a.named()
        .iter()
        .zip(b.named())
        .map(|(&(name, x), (_, y))| {
            vec![
                name.to_string(),
                format_bytes(x),
                format_bytes(y),
                ratio(y, x),
            ]
        })
        .collect()
}

/// float32 against float64 for the setup: the field report's advice, measured.
#[derive(Debug, Clone, Serialize)]
pub struct Floats {
    pub float32: Terms,
    pub float64: Terms,
    /// The whole synthetic data set in host memory (features and 4-byte labels).
    pub dataset_bytes_float32: u64,
    pub dataset_bytes_float64: u64,
}

pub fn float_comparison(
    plan: &Planner,
    base: &MlpConfig,
    rows: u64,
    samples: u64,
) -> Result<Floats, Error> {
    let at = |p| with(base, p, 1, Checkpointing::Off);
    let data = |bytes: u64| samples * (base.inputs * bytes + 4);
    Ok(Floats {
        float32: Terms::of(plan, &at(Precision::Float32), rows)?,
        float64: Terms::of(plan, &at(Precision::Float64), rows)?,
        dataset_bytes_float32: data(4),
        dataset_bytes_float64: data(8),
    })
}

impl Floats {
    pub fn cells(&self) -> Vec<Vec<String>> {
        compare_cells(&self.float32, &self.float64)
    }

    pub fn verdict(&self) -> String {
        let (a, b) = (self.float32.planned_peak, self.float64.planned_peak);
        format!(
            "Measured: float64 needs {} where float32 needs {} ({}). The field report halves the \
             features by loading them as float32; here every floating-point term doubles in \
             float64 — weights, gradients, optimizer state and activations too, not only the \
             features — and the input batch grows a little less (×{:.2}) because the labels are \
             4-byte integers either way. The whole data set waits in host memory ({} as float32, \
             {} as float64); the card only ever holds one batch of it: the report's \"load in \
             chunks\", done by the engine.",
            format_bytes(b),
            format_bytes(a),
            ratio(b, a),
            self.float64.estimate.input_batch as f64
                / self.float32.estimate.input_batch.max(1) as f64,
            format_bytes(self.dataset_bytes_float32),
            format_bytes(self.dataset_bytes_float64),
        )
    }
}

/// What mixed precision saves on one setup.
#[derive(Debug, Clone, Serialize)]
pub struct Saving {
    pub description: String,
    pub float32: Terms,
    pub mixed: Terms,
    /// `1 − mixed / float32` of the planned peaks.
    pub saving: f64,
    /// Activations and temporaries as a share of the float32 peak.
    pub activation_share: f64,
}

impl Saving {
    fn of(
        plan: &Planner,
        base: &MlpConfig,
        rows: u64,
        description: String,
    ) -> Result<Saving, Error> {
        let float32 = Terms::of(
            plan,
            &with(base, Precision::Float32, 1, Checkpointing::Off),
            rows,
        )?;
        let mixed = Terms::of(
            plan,
            &with(base, Precision::Mixed, 1, Checkpointing::Off),
            rows,
        )?;
        let e = &float32.estimate;
        Ok(Saving {
            description,
            saving: 1.0 - mixed.planned_peak as f64 / float32.planned_peak.max(1) as f64,
            activation_share: (e.activations + e.temporaries) as f64
                / e.peak_allocated.max(1) as f64,
            float32,
            mixed,
        })
    }

    fn summary(&self) -> String {
        format!(
            "{} → {} (−{:.1} %)",
            format_bytes(self.float32.planned_peak),
            format_bytes(self.mixed.planned_peak),
            100.0 * self.saving
        )
    }
}

/// Mixed precision on this setup, and on Challenge 2's model-dominated one.
#[derive(Debug, Clone, Serialize)]
pub struct Mixed {
    /// The batch-size article's claim, in our words.
    pub claim: &'static str,
    pub this_setup: Saving,
    pub challenge2_setup: Saving,
    /// Whether the measurement supports "nearly halves" (a saving of at least 40 %).
    pub nearly_halves_here: bool,
    pub nearly_halves_on_challenge2: bool,
}

const CLAIM: &str = "mixed precision (16-bit floats) nearly halves the memory a model needs";

/// The claim "nearly halves" is taken to hold at a saving of at least this much.
const NEARLY_HALF: f64 = 0.40;

pub fn mixed_comparison(plan: &Planner, base: &MlpConfig, rows: u64) -> Result<Mixed, Error> {
    let this_setup = Saving::of(plan, base, rows, "this setup".into())?;
    let deep = MlpConfig::lesson(5000)
        .with_layers(5)
        .with_optimizer(Optimizer::adam(0.001));
    let challenge2_setup = Saving::of(
        plan,
        &deep,
        32,
        "Challenge 2's network (5 hidden layers of 5000, Adam, batch 32)".into(),
    )?;
    Ok(Mixed {
        claim: CLAIM,
        nearly_halves_here: this_setup.saving >= NEARLY_HALF,
        nearly_halves_on_challenge2: challenge2_setup.saving >= NEARLY_HALF,
        this_setup,
        challenge2_setup,
    })
}

impl Mixed {
    pub fn cells(&self) -> Vec<Vec<String>> {
        compare_cells(&self.this_setup.float32, &self.this_setup.mixed)
    }

    pub fn verdict(&self) -> String {
        let here = &self.this_setup;
        let e = &here.float32.estimate;
        let persistent = e.persistent() as f64 / e.peak_allocated.max(1) as f64;
        let first = if self.nearly_halves_here {
            format!(
                "The batch-size article's claim — {CLAIM} — holds on this setup: {}, because \
                 activations and the temporaries beside them are {:.1} % of the step. Even here \
                 only they shrank: the parameters, gradients and optimizer state are the same \
                 bytes (×1.00), since the master weights stay float32, and so does the input \
                 batch.",
                here.summary(),
                100.0 * here.activation_share
            )
        } else {
            format!(
                "The batch-size article's claim — {CLAIM} — does not hold on this setup: {}. \
                 Only the activations shrank (×0.50); the parameters, gradients and optimizer \
                 state, {:.1} % of the step, stay float32.",
                here.summary(),
                100.0 * persistent
            )
        };
        let other = &self.challenge2_setup;
        format!(
            "{first}\nOn {}, where the model is almost everything, it saves {:.2} %: {}. \
             \"Nearly half\" holds only where activations dominate.",
            other.description,
            100.0 * other.saving,
            other.summary()
        )
    }
}

/// How far each strategy's result on the sample is from the plain run's: accumulation and
/// checkpointing compute the same update (up to float rounding), mixed precision a close one.
#[derive(Debug, Clone, Serialize)]
pub struct Equivalence {
    /// Largest |validation loss − plain's| of the rows that keep the starting precision
    /// (accumulation, checkpointing).
    pub same_update_loss_delta: Option<f64>,
    /// Largest |validation loss − plain's| and |accuracy − plain's| (in points) of the mixed
    /// precision rows.
    pub mixed_loss_delta: Option<f64>,
    pub mixed_accuracy_delta_points: Option<f64>,
}

/// A result within this of the plain run's validation loss is "the same update".
pub const SAME_UPDATE: f64 = 1e-3;

pub fn equivalence(rows: &[Row]) -> Equivalence {
    let result = |r: &Row| {
        r.timing
            .as_ref()
            .and_then(|t| Some((t.validation_loss?, t.validation_accuracy?)))
    };
    let plain = rows.first().and_then(result);
    let start = rows.first().map(|r| r.strategy.precision);
    let widen = |m: Option<f64>, d: f64| Some(m.map_or(d, |m| m.max(d)));
    let (mut same, mut mixed_loss, mut mixed_acc) = (None, None, None);
    for row in rows.iter().skip(1) {
        let (Some((l0, a0)), Some((l, a))) = (plain, result(row)) else {
            continue;
        };
        let dl = f64::from((l - l0).abs());
        let da = 100.0 * f64::from((a - a0).abs());
        if row.strategy.precision == Precision::Mixed {
            mixed_loss = widen(mixed_loss, dl);
            mixed_acc = widen(mixed_acc, da);
        } else if Some(row.strategy.precision) == start {
            same = widen(same, dl);
        }
    }
    Equivalence {
        same_update_loss_delta: same,
        mixed_loss_delta: mixed_loss,
        mixed_accuracy_delta_points: mixed_acc,
    }
}

impl Equivalence {
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(d) = self.same_update_loss_delta {
            out.push(if d <= SAME_UPDATE {
                format!(
                    "Accumulation and checkpointing end at the plain run's validation loss {}: \
                     the same update, up to float rounding.",
                    if d == 0.0 {
                        "exactly".to_string()
                    } else {
                        format!("to within {d:.1e}")
                    }
                )
            } else {
                format!(
                    "Accumulation or checkpointing changed the validation loss by up to {d:.1e}: \
                     on this backing they did not compute the plain run's update — a bug worth \
                     reporting, with this command."
                )
            });
        }
        if let (Some(l), Some(a)) = (self.mixed_loss_delta, self.mixed_accuracy_delta_points) {
            out.push(format!(
                "Mixed precision ends within {l:.1e} of the plain run's validation loss and \
                 {a:.1} accuracy points of its accuracy: a close update, not the same one \
                 (float16 keeps about 3 significant digits)."
            ));
        }
        out
    }
}
