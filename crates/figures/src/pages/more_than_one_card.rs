//! More than one card (`more-than-one-card.md`): Challenge 2's network one layer too deep for
//! the card, with Adam, under every scheme of [`gpumem::parallel`] on 1, 2, 4 and 8 cards.
//!
//! Each cell is measured twice on the `plan` backing: on a card without limit (the memory the
//! scheme wants, by category, for the chart) and on the lesson's card (whether it fits, and
//! which card runs out first). Schemes come from [`Scheme::ALL`], so a new one shows up here
//! without an edit.

use crate::data::{DEEP_BATCH, DEEP_WIDTH, SEED, adam, deepest_fit, network};
use crate::style::grouped;
use anyhow::{Context, Result, anyhow};
use gpumem::lesson::{CARD_BYTES, planning_on_card, planning_unlimited};
use gpumem::mlp::MlpConfig;
use gpumem::parallel::{
    CardFailure, CardMemory, Category, GroupMemory, Scheme, fewest_cards, measure_group,
};
use gpumem::size::format_bytes;
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Bytes as GiB with two decimals, for tables whose header names the unit.
pub fn in_gib(bytes: u64) -> String {
    format!("{:.2}", crate::style::gib(bytes))
}

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

/// The table of the fullest card's peak reserved, scheme by group size, and the fewest cards.
pub fn per_card_table() -> Result<String> {
    let config = setup()?;
    let mut out = format!(
        "{} ({} parameters), a global batch of {DEEP_BATCH} rows, Adam: the peak reserved of \
         the fullest card in GiB (on cards without a limit), ✓ where every card fits in {}, ✗ \
         where one runs out.\n\n| scheme |",
        setup_words()?,
        grouped(config.parameter_count()),
        format_bytes(CARD_BYTES),
    );
    for n in CARD_COUNTS {
        write!(out, " {n} card{} |", if n == 1 { "" } else { "s" })?;
    }
    out.push_str(" fewest cards |\n| :--- |");
    out.push_str(&" ---: |".repeat(CARD_COUNTS.len() + 1));
    out.push('\n');
    for (scheme, fewest) in fewest()? {
        write!(out, "| `{scheme}` |")?;
        for n in CARD_COUNTS {
            let c = cell(scheme, n)?;
            let mark = if c.fits() { "✓" } else { "✗" };
            write!(
                out,
                " {} {mark} |",
                format_bytes(c.fullest()?.peak_reserved)
            )?;
        }
        match fewest {
            Some(n) => writeln!(out, " {n} |")?,
            None => writeln!(out, " more than {} |", CARD_COUNTS[CARD_COUNTS.len() - 1])?,
        }
    }
    Ok(out)
}

/// On the most cards of [`CARD_COUNTS`]: each scheme's fullest card by category at its peak
/// (the categories add up to the peak), and what the card sends in one step.
pub fn categories_table() -> Result<String> {
    let cards = CARD_COUNTS[CARD_COUNTS.len() - 1];
    let mut out = format!(
        "On {cards} cards, the fullest card at its peak in GiB (bytes asked for, before the \
         allocator's rounding; the parts add up to the peak), and what it sends to the others \
         in one step, the second (with its unit):\n\n| scheme |"
    );
    for c in Category::ALL {
        write!(out, " {} |", short_name(c))?;
    }
    out.push_str(" sent |\n| :--- |");
    out.push_str(&" ---: |".repeat(Category::ALL.len() + 1));
    out.push('\n');
    for scheme in Scheme::ALL {
        let card = cell(scheme, cards)?.fullest()?;
        if card.at_peak.total() != card.peak_requested {
            return Err(anyhow!(
                "{scheme}: the categories do not add up to the peak"
            ));
        }
        write!(out, "| `{scheme}` |")?;
        for c in Category::ALL {
            write!(out, " {} |", in_gib(card.at_peak.get(c)))?;
        }
        let sent = sent_per_step(scheme, cards, card.card)?;
        writeln!(out, " {} |", format_bytes(sent))?;
    }
    Ok(out)
}

/// A category's name for a narrow table column.
fn short_name(c: Category) -> &'static str {
    match c {
        Category::Parameters => "param&shy;eters",
        Category::Gradients => "gradi&shy;ents",
        Category::OptimizerState => "optimizer state",
        Category::Activations => "activations, temporaries",
        Category::CommBuffers => "buffers",
    }
}

/// Which card of `cards` runs out first under `scheme`, where and on what: in words.
pub fn failure_words(scheme: Scheme, cards: usize) -> Result<String> {
    let c = cell(scheme, cards)?;
    Ok(match &c.failure {
        Some(f) => format!(
            "card {} runs out first, in the {}, allocating `{}`",
            f.card, f.pass, f.oom.label
        ),
        None => format!("every card fits on {cards} cards"),
    })
}

/// `35 hidden layers of 5 000` (inline).
pub fn setup_inline() -> Result<String> {
    setup_words()
}

/// The pipeline's micro-batches per stage (inline).
pub fn micro_batches_inline() -> Result<String> {
    Ok(gpumem::parallel::MICRO_BATCHES_PER_STAGE.to_string())
}

/// The pipelines' bubble on each group size of the page, in words (inline): the share of a
/// step each card idles in the schedule's unit-time model.
pub fn bubble_inline() -> Result<String> {
    use gpumem::parallel::{MICRO_BATCHES_PER_STAGE, Schedule, bubble};
    let shares: Vec<String> = CARD_COUNTS
        .iter()
        .filter(|&&n| n > 1)
        .map(|&n| {
            let m = MICRO_BATCHES_PER_STAGE as usize * n;
            format!(
                "{:.0} % on {n} cards",
                100.0 * bubble(Schedule::GPipe, n, m)
            )
        })
        .collect();
    Ok(shares.join(", "))
}

/// DDP's two copies of the gradients on the most cards, in words (inline): the `.grad`
/// tensors and the buckets.
pub fn ddp_twice() -> Result<String> {
    let n = CARD_COUNTS[CARD_COUNTS.len() - 1];
    let at = cell(Scheme::Ddp, n)?.fullest()?.at_peak;
    Ok(format!(
        "{} of gradients and {} of buckets",
        format_bytes(at.gradients),
        format_bytes(at.comm_buffers)
    ))
}

/// Bytes card `card` sends in one steady step (the second) of `scheme` on `cards` cards
/// without a limit: the group's first broadcast and step are left out.
pub fn sent_per_step(scheme: Scheme, cards: usize, card: usize) -> Result<u64> {
    let config = setup()?;
    let devices = (0..cards)
        .map(|_| gpumem::Device::new(&planning_unlimited()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut group = gpumem::parallel::Group::new(&devices, &config, scheme, SEED)
        .map_err(|(e, _)| anyhow!("{scheme} on {cards} cards: {e}"))?;
    let mut sent = Vec::new();
    for _ in 0..2 {
        group
            .train_step(gpumem::mlp::Batch::Planned(DEEP_BATCH))
            .map_err(|(e, _)| anyhow!("{scheme} on {cards} cards: {e}"))?;
        let bytes = group.comm_bytes();
        let b = bytes
            .get(card)
            .ok_or_else(|| anyhow!("{scheme} on {cards} cards has no card {card}"))?;
        sent.push(b.sent);
    }
    Ok(sent[1] - sent[0])
}
