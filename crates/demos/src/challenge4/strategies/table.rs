//! The demo's table: a row per strategy (its planned peak and its timing), the cheapest
//! combination that fits, and how a strategy is described.

use super::Planner;
use super::timing::Timing;
use gpumem::device::Error;
use gpumem::fit::{Cost, Fit, checkpointing_has_effect, fitting_strategies};
use gpumem::mlp::{Checkpointing, MlpConfig, Precision, Strategy};
use gpumem::size::format_bytes;
use serde::Serialize;

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
        ..Default::default()
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
