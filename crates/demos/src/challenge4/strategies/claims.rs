//! The sources' claims checked against the engine: float32 vs float64, and what mixed
//! precision saves.

use super::{Planner, with};
use gpumem::device::Error;
use gpumem::estimate::{Estimate, estimate};
use gpumem::mlp::{Checkpointing, MlpConfig, Optimizer, Precision};
use gpumem::size::format_bytes;
use serde::Serialize;

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
        let [a, b, c, d, e, f] = self.estimate.terms();
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
    /// The whole synthetic data set in host memory (features, and labels as 4-byte integers).
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
             features — and the batch grows a little less (×{:.2}) because the labels are \
             8-byte integers (int64) either way. The whole data set waits in host memory ({} as \
             float32, \
             {} as float64); the card only ever holds one batch of it: the report's \"load in \
             chunks\", done by the engine.",
            format_bytes(b),
            format_bytes(a),
            ratio(b, a),
            self.float64.estimate.batch as f64 / self.float32.estimate.batch.max(1) as f64,
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
            "{} → {} ({})",
            format_bytes(self.float32.planned_peak),
            format_bytes(self.mixed.planned_peak),
            signed_percent(-self.saving)
        )
    }
}

/// A relative change as `−49.9 %` or `+0.1 %`.
fn signed_percent(change: f64) -> String {
    let p = 100.0 * change;
    if p < 0.0 {
        format!("−{:.1} %", -p)
    } else {
        format!("+{p:.1} %")
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
        let kept = |t: &Terms| t.estimate.parameters;
        let first = if self.nearly_halves_here {
            format!(
                "The batch-size article's claim — {CLAIM} — holds on this setup: {}, because \
                 activations and the temporaries beside them are {:.1} % of the step. Even here \
                 only they shrank (and `y_pred`, autocast's float16 output): the parameters keep \
                 their bytes ({}), since the master weights stay float32.",
                here.summary(),
                100.0 * here.activation_share,
                ratio(kept(&here.mixed), kept(&here.float32))
            )
        } else {
            format!(
                "The batch-size article's claim — {CLAIM} — does not hold on this setup: {}. \
                 Only the activations shrank; the parameters, gradients and optimizer state, \
                 {:.1} % of the step, stay float32, and autocast adds float16 copies of the \
                 weights.",
                here.summary(),
                100.0 * persistent
            )
        };
        let other = &self.challenge2_setup;
        let verb = if other.saving > 0.0005 {
            format!("it saves {:.1} %", 100.0 * other.saving)
        } else {
            "it saves nothing".to_string()
        };
        let m = &other.mixed.estimate;
        let model_share = (m.persistent() + m.temporaries) as f64 / m.peak_allocated.max(1) as f64;
        format!(
            "{first}\nOn {}, where the model is almost everything, {verb}: {} — at its busiest \
             moment the model's float32 tensors (parameters, gradients, optimizer state, the \
             update's temporaries) are {:.1} % of the bytes. \"Nearly half\" holds only where \
             activations dominate.",
            other.description,
            other.summary(),
            100.0 * model_share
        )
    }
}
