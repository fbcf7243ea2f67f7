//! Every parallel scheme of [`gpumem::parallel`] on every group size: Challenge 2's network
//! one layer too deep for the card, with Adam, measured once per process. A shared setup at
//! the bottom of the crate: the page "More than one card", its chart and the quizzes read it.
//!
//! Each cell is measured twice on the `plan` backing: on a card without limit (the memory the
//! scheme wants, by category, for the chart) and on the lesson's card (whether it fits, and
//! which card runs out first). Schemes come from [`Scheme::ALL`], so a new one shows up here
//! without an edit.

use crate::data::{DEEP_BATCH, DEEP_WIDTH, SEED, adam, deepest_fit, network};
use crate::style::grouped;
use anyhow::{Context, Result, anyhow};
use gpumem::lesson::{planning_on_card, planning_unlimited};
use gpumem::mlp::MlpConfig;
use gpumem::parallel::{CardFailure, CardMemory, GroupMemory, Scheme, fewest_cards, measure_group};
use std::sync::OnceLock;

/// The group sizes the page and the chart show.
pub const CARD_COUNTS: [usize; 4] = [1, 2, 4, 8];

/// One scheme on one group size.
#[derive(Debug, Clone)]
pub struct Cell {
    pub scheme: Scheme,
    pub cards: usize,
    /// On cards without limit: what every card wants.
    pub wants: GroupMemory,
    /// On the lesson's cards: the card that ran out first, if one did.
    pub failure: Option<CardFailure>,
}

impl Cell {
    /// The card with the largest peak reserved: the one that decides whether the scheme fits.
    pub fn fullest(&self) -> Result<&CardMemory> {
        self.wants
            .cards
            .iter()
            .max_by_key(|c| (c.peak_reserved, std::cmp::Reverse(c.card)))
            .ok_or_else(|| anyhow!("{} on {} cards measured no card", self.scheme, self.cards))
    }

    pub fn fits(&self) -> bool {
        self.failure.is_none()
    }
}

/// The page's setup: Challenge 2's width and batch, Adam, at the first depth that does not
/// fit on one card (found by the engine, as Challenge 2 finds it).
pub fn setup() -> Result<MlpConfig> {
    let deepest = deepest_fit(adam())?;
    Ok(network(DEEP_WIDTH, deepest.layers + 1, adam()))
}

/// Every scheme on every group size of [`CARD_COUNTS`] (computed once per process).
pub fn grid() -> Result<&'static [Cell]> {
    static GRID: OnceLock<Result<Vec<Cell>, String>> = OnceLock::new();
    GRID.get_or_init(|| measure_grid().map_err(|e| format!("{e:#}")))
        .as_deref()
        .map_err(|e| anyhow!("{e}"))
}

fn measure_grid() -> Result<Vec<Cell>> {
    let config = setup()?;
    let mut cells = Vec::new();
    for scheme in Scheme::ALL {
        for cards in CARD_COUNTS {
            let run = |options| {
                measure_group(&options, &config, scheme, cards, DEEP_BATCH, SEED)
                    .with_context(|| format!("{scheme} on {cards} card(s)"))
            };
            let on_card = run(planning_on_card())?;
            cells.push(Cell {
                scheme,
                cards,
                wants: run(planning_unlimited())?,
                failure: on_card.failures.first().cloned(),
            });
        }
    }
    Ok(cells)
}

/// The cell of `scheme` on `cards` cards.
pub fn cell(scheme: Scheme, cards: usize) -> Result<&'static Cell> {
    grid()?
        .iter()
        .find(|c| c.scheme == scheme && c.cards == cards)
        .ok_or_else(|| anyhow!("no cell for {scheme} on {cards} cards"))
}

/// The fewest cards (up to the largest of [`CARD_COUNTS`]) each scheme needs on the lesson's
/// card.
pub fn fewest() -> Result<Vec<(Scheme, Option<usize>)>> {
    let config = setup()?;
    let most = CARD_COUNTS[CARD_COUNTS.len() - 1];
    Scheme::ALL
        .into_iter()
        .map(|s| {
            let n = fewest_cards(&planning_on_card(), &config, s, DEEP_BATCH, most)
                .with_context(|| format!("the fewest cards for {s}"))?;
            Ok((s, n))
        })
        .collect()
}

/// `62 hidden layers of 5000`: the setup in words.
pub fn setup_words() -> Result<String> {
    let c = setup()?;
    Ok(format!(
        "{} hidden layers of {}",
        c.layers,
        grouped(c.hidden)
    ))
}
