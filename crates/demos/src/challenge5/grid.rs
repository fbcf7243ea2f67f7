//! The demo's measurements: each scheme on each group size, planned twice on the `plan`
//! backing — on cards without limit (what every card wants) and on the demo's card (whether
//! the group fits, and which card runs out first).

use anyhow::Context;
use gpumem::DeviceOptions;
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::MlpConfig;
use gpumem::parallel::{CardFailure, GroupMemory, Scheme, measure_group};
use gpumem::size::format_bytes;
use serde_json::{Value, json};

/// One scheme on one group size.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub(crate) scheme: Scheme,
    pub(crate) cards: usize,
    /// On cards without limit.
    pub(crate) wants: GroupMemory,
    /// On the demo's cards: the card that ran out first, if one did.
    pub(crate) failure: Option<CardFailure>,
}

impl Cell {
    pub(crate) fn fits(&self) -> bool {
        self.failure.is_none()
    }

    /// The rows one card trains on: its share of the batch, or every row for a pipeline.
    fn rows(&self) -> u64 {
        self.wants.cards.iter().map(|c| c.rows).max().unwrap_or(0)
    }

    /// `card 3 (backward pass): CUDA out of memory. Tried to allocate …` — the message's
    /// first line.
    fn first_failure(&self) -> String {
        self.failure.as_ref().map_or_else(String::new, |f| {
            format!(
                "card {} ({}): {}",
                f.card,
                f.pass,
                short(&f.oom.to_string())
            )
        })
    }

    pub(crate) fn table_row(&self) -> Vec<String> {
        vec![
            self.scheme.name().to_string(),
            self.cards.to_string(),
            self.rows().to_string(),
            format_bytes(self.wants.peak_reserved()),
            format_bytes(self.wants.peak_allocated()),
            if self.fits() { "yes" } else { "no" }.to_string(),
            self.first_failure(),
        ]
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "scheme": self.scheme.name(),
            "cards": self.cards,
            "rows_per_card": self.rows(),
            "peak_reserved": self.wants.peak_reserved(),
            "peak_allocated": self.wants.peak_allocated(),
            "fits": self.fits(),
            "first_failure": self.failure.as_ref().map(|f| json!({
                "card": f.card,
                "pass": f.pass,
                "message": f.oom.to_string(),
            })),
            "per_card": self.wants.cards,
        })
    }
}

/// A message's first line up to the device it names: `out of memory. Tried to allocate
/// 96.00 MiB (plan device 3)`, short enough for a table column.
fn short(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    match first.split_once(';') {
        Some((head, _)) if head.contains('(') => format!("{head})"),
        _ => first.to_string(),
    }
}

/// The first line of the first failure among `cells`, in full.
pub(crate) fn first_message(cells: &[Cell]) -> Option<String> {
    let f = cells.iter().find_map(|c| c.failure.as_ref())?;
    let message = f.oom.to_string();
    Some(message.lines().next().unwrap_or_default().to_string())
}

pub(crate) const HEADERS: [&str; 7] = [
    "scheme",
    "cards",
    "rows/card",
    "fullest card wants (reserved)",
    "(allocated)",
    "fits?",
    "first to run out",
];

/// `scheme` on `cards` cards with a global batch of `batch` rows; a group the scheme cannot
/// form (more cards than rows, or than layers for a pipeline) is an error that says which.
pub(crate) fn measure(
    card: &DeviceOptions,
    config: &MlpConfig,
    scheme: Scheme,
    cards: usize,
    batch: u64,
    seed: u64,
) -> anyhow::Result<Cell> {
    let what = || format!("{scheme} on {cards} card(s)");
    let on_card = measure_group(card, config, scheme, cards, batch, seed).with_context(what)?;
    if on_card.fits() {
        // What it used on the card is what it wants.
        return Ok(Cell {
            scheme,
            cards,
            wants: on_card,
            failure: None,
        });
    }
    let wants = measure_group(&planning_unlimited(), config, scheme, cards, batch, seed)
        .with_context(what)?;
    Ok(Cell {
        scheme,
        cards,
        wants,
        failure: on_card.failures.into_iter().next(),
    })
}
