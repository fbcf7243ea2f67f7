//! Challenge 5's command line: the flags and how each value is read.

use clap::Parser;
use cli::{DeviceArgs, ModelArgs};
use gpumem::parallel::Scheme;

/// Train the network Challenge 2 found one layer too deep for one card (and its Adam variant)
/// on several cards under each scheme: each group's fullest card, whether it fits, which card
/// runs out first, and the fewest cards each scheme needs.
#[derive(Debug, Parser)]
#[command(name = "challenge5", version)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) device: DeviceArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Group sizes to try, a comma-separated list.
    #[arg(long, value_name = "N,…", default_value = "1,2,4,8", value_delimiter = ',', value_parser = parse_cards)]
    pub(crate) cards: Vec<usize>,
    /// Schemes to try, repeatable or a comma-separated list (default: every scheme the engine
    /// has). `fsdp` is zero3.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',', value_parser = parse_scheme)]
    pub(crate) scheme: Vec<Scheme>,
    /// The largest group the search for the fewest cards tries.
    #[arg(long, value_name = "N", default_value = "8", value_parser = parse_cards)]
    pub(crate) max_cards: usize,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The most cards a group may have: enough for the lesson, few enough that the plan stays
/// quick (each card is its own planned device).
pub(crate) const MOST_CARDS: usize = 1024;

fn parse_cards(s: &str) -> Result<usize, String> {
    let n = cli::args::parse_positive(s).map_err(|e| format!("cards {e}"))?;
    if n > MOST_CARDS as u64 {
        return Err(format!("at most {MOST_CARDS} cards, got {n}"));
    }
    Ok(n as usize)
}

fn parse_scheme(s: &str) -> Result<Scheme, String> {
    s.parse()
}

impl Cli {
    /// The schemes asked for, in the engine's order, or all of them.
    pub(crate) fn schemes(&self) -> Vec<Scheme> {
        Scheme::ALL
            .into_iter()
            .filter(|s| self.scheme.is_empty() || self.scheme.contains(s))
            .collect()
    }

    /// The group sizes asked for, sorted, each once.
    pub(crate) fn card_counts(&self) -> Vec<usize> {
        let mut cards = self.cards.clone();
        cards.sort_unstable();
        cards.dedup();
        cards
    }
}
