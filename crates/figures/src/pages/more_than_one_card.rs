//! More than one card (`more-than-one-card.md`): the tables and inline numbers of the page,
//! from the grid of every scheme on 1, 2, 4 and 8 cards ([`crate::schemes`]).

use crate::data::{DEEP_BATCH, SEED};
use crate::schemes::{CARD_COUNTS, cell, fewest, setup, setup_words};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::lesson::{CARD_BYTES, planning_unlimited};
use gpumem::parallel::{Category, Scheme};
use gpumem::size::format_bytes;
use std::fmt::Write as _;

/// Bytes as GiB with two decimals, for tables whose header names the unit.
pub fn in_gib(bytes: u64) -> String {
    format!("{:.2}", crate::style::gib(bytes))
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
