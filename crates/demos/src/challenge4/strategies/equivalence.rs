//! Whether every strategy trains the same model: each row's result against the plain run's.

use super::table::Row;
use gpumem::mlp::Precision;
use serde::Serialize;

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
