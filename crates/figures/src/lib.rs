//! The book's figures and quoted numbers, computed from the engine — never typed by hand.
//!
//! [`ARTIFACTS`] is the one registry: each entry names a file under the book's `src/` and the
//! function that renders its contents. The binary (`cargo run -p figures`) writes them all;
//! the staleness test renders them in memory and compares with the committed files, so a
//! change to the engine that moves a number fails `cargo test` until they are regenerated.
//!
//! Everything is computed on the `plan` backing (allocations without kernels) with fixed
//! seeds and no timings or dates, so the output is the same, byte for byte, on every machine.

pub mod alts;
pub mod charts;
pub mod data;
pub mod files;
pub mod snippets;
pub mod style;

use alts::{ALT_ALLOC_TIMELINE, ALT_MEMORY_VS_BATCH, ALT_MEMORY_VS_DEPTH, ALT_MEMORY_VS_WIDTH};
use anyhow::Result;

/// One generated file.
pub struct Artifact {
    /// Where it goes, relative to the book's `src/` folder.
    pub path: &'static str,
    /// What it shows, in a few words (printed when written).
    pub about: &'static str,
    /// Its contents.
    pub render: fn() -> Result<String>,
}

/// Every generated file, charts first.
pub const ARTIFACTS: &[Artifact] = &[
    Artifact {
        path: "figures/memory_vs_batch.svg",
        about: "peak memory of one step vs batch size (1 row to the full set), stacked by category, measured points, capacity",
        render: charts::memory_vs_batch,
    },
    Artifact {
        path: "figures/memory_vs_width.svg",
        about: "peak memory vs hidden width at batch 32 for 1, 3 and 5 hidden layers, capacity",
        render: charts::memory_vs_width,
    },
    Artifact {
        path: "figures/memory_vs_depth.svg",
        about: "peak allocated and reserved vs depth at width 5000, batch 32, SGD and Adam, deepest fit",
        render: charts::memory_vs_depth,
    },
    Artifact {
        path: "figures/alloc_timeline.svg",
        about: "allocated and reserved after every allocator event over model creation and 3 steps",
        render: charts::alloc_timeline,
    },
    Artifact {
        path: "generated/estimate_table.md",
        about: "table: the equation's peak vs the measured peak for every reference setup",
        render: snippets::estimate_table,
    },
    Artifact {
        path: "generated/challenge1_full_batch.md",
        about: "challenge 1: the full training set as one batch, by category, the OOM, the largest batch",
        render: snippets::challenge1_full_batch,
    },
    Artifact {
        path: "generated/challenge2_depth.md",
        about: "challenge 2: the deepest network that fits (width 5000, batch 32), SGD and Adam, vs the equation",
        render: snippets::challenge2_depth,
    },
    Artifact {
        path: "generated/widest_on_card.md",
        about: "table: the widest hidden layers that fit at batch 32 for 1, 3 and 5 layers",
        render: snippets::widest_on_card,
    },
    Artifact {
        path: "generated/figure_alts.md",
        about: "list: every figure's alt text",
        render: snippets::figure_alts,
    },
    Artifact {
        path: "generated/alt_memory_vs_batch.md",
        about: "inline: alt text of memory_vs_batch.svg",
        render: || Ok(ALT_MEMORY_VS_BATCH.to_string()),
    },
    Artifact {
        path: "generated/alt_memory_vs_width.md",
        about: "inline: alt text of memory_vs_width.svg",
        render: || Ok(ALT_MEMORY_VS_WIDTH.to_string()),
    },
    Artifact {
        path: "generated/alt_memory_vs_depth.md",
        about: "inline: alt text of memory_vs_depth.svg",
        render: || Ok(ALT_MEMORY_VS_DEPTH.to_string()),
    },
    Artifact {
        path: "generated/alt_alloc_timeline.md",
        about: "inline: alt text of alloc_timeline.svg",
        render: || Ok(ALT_ALLOC_TIMELINE.to_string()),
    },
    Artifact {
        path: "generated/card_capacity.md",
        about: "inline: the card's capacity",
        render: snippets::card_capacity,
    },
    Artifact {
        path: "generated/full_batch_peak.md",
        about: "inline: the equation's peak for the full training set as one batch",
        render: snippets::full_batch_peak,
    },
    Artifact {
        path: "generated/full_batch_tried.md",
        about: "inline: what the full-batch step tried to allocate when it ran out",
        render: snippets::full_batch_tried,
    },
    Artifact {
        path: "generated/largest_batch_on_card.md",
        about: "inline: the largest batch of the lesson's network that fits on the card (rows)",
        render: snippets::largest_batch_on_card,
    },
    Artifact {
        path: "generated/deepest_sgd.md",
        about: "inline: the deepest network (width 5000, batch 32, SGD) that fits",
        render: snippets::deepest_sgd,
    },
    Artifact {
        path: "generated/deepest_adam.md",
        about: "inline: the deepest network (width 5000, batch 32, Adam) that fits",
        render: snippets::deepest_adam,
    },
];
