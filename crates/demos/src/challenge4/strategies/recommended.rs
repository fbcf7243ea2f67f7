//! The combinations the demo recommends as rows of its table, so that each is timed beside
//! the strategies it is chosen over, and what the times say about them.

use super::Planner;
use super::table::{Cheapest, Row, cheapest, precision_name, rows};
use gpumem::Backend;
use gpumem::device::Error;
use gpumem::fit::checkpointing_has_effect;
use gpumem::mlp::{Checkpointing, MlpConfig, Precision, Strategy};

/// A combination in the words of the demo's table, where a strategy left off is not named,
/// the starting precision is not named, and "checkpointing" means the table's segments:
/// `mixed + accumulation ×3 + checkpointing`.
pub fn combination_words(s: &Strategy, start: Precision, layers: u64) -> String {
    let mut words = Vec::new();
    match s.precision {
        p if p == start => {}
        Precision::Mixed => words.push("mixed".to_string()),
        p => words.push(precision_name(p).to_string()),
    }
    if s.accumulation > 1 {
        words.push(format!("accumulation ×{}", s.accumulation));
    }
    if checkpointing_has_effect(s.checkpointing, layers) {
        words.push("checkpointing".to_string());
    }
    match words.is_empty() {
        true => precision_name(start).to_string(),
        false => words.join(" + "),
    }
}

/// Row names of the combinations the demo recommends: these prefixes, then
/// [`combination_words`].
pub const CHEAPEST_PREFIX: &str = "cheapest: ";
pub const CHEAPEST_FLOAT32_PREFIX: &str = "cheapest in float32: ";

/// The demo's whole table: every strategy alone and combined ([`rows`]), then each combination
/// the demo recommends ([`cheapest`]) that no row already runs — so that every recommendation
/// is planned and timed beside the strategies it is chosen over. Returns the recommendations
/// too.
pub fn table(
    plan: &Planner,
    base: &MlpConfig,
    rows_per_update: u64,
    start: Precision,
    k: u64,
    ck: Checkpointing,
) -> Result<(Vec<Row>, Cheapest), Error> {
    let mut table = rows(base, start, k, ck);
    let cheapest = cheapest(plan, base, rows_per_update, ck)?;
    let recommended = [
        (CHEAPEST_PREFIX, cheapest.best.as_ref()),
        (CHEAPEST_FLOAT32_PREFIX, cheapest.float32.as_ref()),
    ];
    for (prefix, fit) in recommended {
        let Some(fit) = fit else { continue };
        let row = Row::new(
            &format!(
                "{prefix}{}",
                combination_words(&fit.strategy, start, base.layers)
            ),
            fit.strategy,
        );
        let key = row.effective(base);
        if !table.iter().any(|r| r.effective(base) == key) {
            table.push(row);
        }
    }
    Ok((table, cheapest))
}

/// The row of `table` that runs `strategy` (as it runs: see [`Row::effective`]).
pub fn row_of<'a>(table: &'a [Row], strategy: &Strategy, base: &MlpConfig) -> Option<&'a Row> {
    let key = Row::new("", *strategy).effective(base);
    table.iter().find(|r| r.effective(base) == key)
}

/// The fastest row on the sample among those that fit the card at full size.
pub fn fastest_fitting(table: &[Row]) -> Option<&Row> {
    table
        .iter()
        .filter(|r| r.fits)
        .filter_map(|r| Some((r, r.timing.as_ref()?.seconds_per_epoch?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, _)| r)
}

/// After the times: whether the demo's cheapest was the fastest row that fits on `backend`.
pub fn fastest_line(
    table: &[Row],
    cheapest: &Cheapest,
    base: &MlpConfig,
    backend: Backend,
) -> Option<String> {
    let fastest = fastest_fitting(table)?;
    let best = row_of(table, &cheapest.best.as_ref()?.strategy, base)?;
    let ratio = |r: &Row| {
        r.timing
            .as_ref()
            .and_then(|t| t.relative_to_none)
            .map_or("—".to_string(), |x| format!("×{x:.2}"))
    };
    Some(if best.name == fastest.name {
        format!(
            "Measured on the {backend} backing it was also the fastest that fits ({} the time \
             of none).",
            ratio(best)
        )
    } else {
        format!(
            "Measured on the {backend} backing it took {} the time of none; the fastest that \
             fits was {}, at {}. \"Cheapest\" is a rule, not a measurement: time your own \
             device.",
            ratio(best),
            fastest.display_name(),
            ratio(fastest)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
    use gpumem::lesson::CARD_BYTES;

    /// Every combination the demo recommends is a row of its table (so it is timed), once.
    #[test]
    fn the_recommended_combinations_are_rows() {
        let (f32, sqrt) = (Precision::Float32, Checkpointing::Sqrt);
        let plan = Planner::new(CARD_BYTES);
        for layers in [1, 9] {
            let base = MlpConfig::lesson(2000).with_layers(layers);
            let k = super::super::micro_batches(
                &plan,
                &base,
                FULL,
                f32,
                super::super::Accumulation::Auto,
                sqrt,
            )
            .unwrap();
            let (table, cheapest) = table(&plan, &base, FULL, f32, k, sqrt).unwrap();
            for fit in [cheapest.best.unwrap(), cheapest.float32.unwrap()] {
                let row = row_of(&table, &fit.strategy, &base);
                assert!(
                    row.is_some(),
                    "{layers} layers: {:?} is not a row",
                    fit.strategy
                );
            }
            let runs: Vec<Strategy> = table.iter().map(|r| r.effective(&base)).collect();
            let repeated = (0..runs.len())
                .filter(|&i| runs[..i].contains(&runs[i]))
                .count();
            if layers == 9 {
                // Checkpointing has layers to drop: every row is a step of its own, and the
                // two recommendations are new rows.
                assert_eq!(repeated, 0);
                let names: Vec<&str> = table.iter().map(|r| r.name.as_str()).collect();
                assert!(
                    names.contains(&"cheapest: mixed + accumulation ×3 + checkpointing"),
                    "{names:?}"
                );
                assert!(
                    names.contains(&"cheapest in float32: accumulation ×5 + checkpointing"),
                    "{names:?}"
                );
            }
        }
    }

    #[test]
    fn combinations_in_words() {
        let s = |precision, accumulation, checkpointing| Strategy {
            precision,
            accumulation,
            checkpointing,
            ..Default::default()
        };
        let (f32, mixed, off) = (Precision::Float32, Precision::Mixed, Checkpointing::Off);
        let ck = Checkpointing::Every(3);
        assert_eq!(combination_words(&s(f32, 1, off), f32, 9), "float32");
        assert_eq!(combination_words(&s(mixed, 1, off), f32, 9), "mixed");
        assert_eq!(
            combination_words(&s(f32, 5, ck), f32, 9),
            "accumulation ×5 + checkpointing"
        );
        // Checkpointing with nothing to drop is not named.
        assert_eq!(combination_words(&s(f32, 3, ck), f32, 1), "accumulation ×3");
        assert_eq!(
            combination_words(&s(f32, 2, off), Precision::Float64, 1),
            "float32 + accumulation ×2"
        );
    }
}
