//! `per_card.svg`: the multi-card page's chart — what the fullest card holds at its peak,
//! by category, for every scheme on 1, 2, 4 and 8 cards, against the card's capacity.

use super::IDEAL;
use crate::data::DEEP_BATCH;
use crate::schemes::{CARD_COUNTS, cell, setup_words};
use crate::style::palette::{BLUE, GREEN, ORANGE, PURPLE, SKY};
use ::charts::per_card::{Bar, Panel, PerCardChart, per_card_svg};
use anyhow::Result;
use gpumem::lesson::CARD_BYTES;
use gpumem::parallel::{Category, Scheme};
use gpumem::size::format_bytes;
use plotters::style::RGBColor;

/// A category's colour: the model's own memory in blues and purple as on the batch chart.
fn color(c: Category) -> RGBColor {
    match c {
        Category::Parameters => BLUE,
        Category::Gradients => SKY,
        Category::OptimizerState => PURPLE,
        Category::Activations => GREEN,
        Category::CommBuffers => ORANGE,
    }
}

/// One sentence per scheme: its fullest card on the fewest and the most cards.
pub fn alt_per_card() -> Result<String> {
    let (first, last) = (CARD_COUNTS[0], CARD_COUNTS[CARD_COUNTS.len() - 1]);
    let mut schemes = Vec::new();
    for s in Scheme::ALL {
        let (a, b) = (cell(s, first)?, cell(s, last)?);
        schemes.push(format!(
            "{s} from {} on {first} to {} on {last}{}",
            format_bytes(a.fullest()?.peak_requested),
            format_bytes(b.fullest()?.peak_requested),
            if b.fits() {
                ""
            } else {
                ", its peak reserved still over the line"
            }
        ));
    }
    Ok(format!(
        "Panels of stacked bars, one panel per scheme, one bar per group size ({}), for {} at \
         a global batch of {DEEP_BATCH} with Adam: each bar is what the fullest card holds at \
         its peak, split into parameters, gradients, optimizer state, activations and \
         temporaries, and communication buffers, with a tick at its peak reserved and a dashed \
         line at {IDEAL} {} capacity. The bars go {}.",
        CARD_COUNTS.map(|n| n.to_string()).join(", "),
        setup_words()?,
        format_bytes(CARD_BYTES),
        schemes.join("; "),
    ))
}

pub fn per_card() -> Result<String> {
    let panels = Scheme::ALL
        .into_iter()
        .map(|scheme| {
            let bars = CARD_COUNTS
                .into_iter()
                .map(|n| {
                    let card = cell(scheme, n)?.fullest()?;
                    Ok(Bar {
                        cards: n,
                        parts: Category::ALL.map(|c| card.at_peak.get(c)).to_vec(),
                        peak_reserved: card.peak_reserved,
                    })
                })
                .collect::<Result<_>>()?;
            Ok(Panel {
                title: scheme.name().to_string(),
                bars,
            })
        })
        .collect::<Result<_>>()?;
    per_card_svg(&PerCardChart {
        title: format!(
            "The fullest card vs cards in the group ({})",
            setup_words()?
        ),
        alt: alt_per_card()?,
        categories: Category::ALL
            .map(|c| (c.name().to_string(), color(c)))
            .to_vec(),
        panels,
        capacity: CARD_BYTES,
        whose: IDEAL.to_string(),
    })
}
