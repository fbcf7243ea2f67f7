//! Challenge 3's two late failures as the book quotes them: a loop that keeps every step's
//! outputs (a leak) beside one that drops them, and a loop that keeps the last step's outputs
//! while the last batch of an epoch is short (a fragmented cache), with each of the
//! allocator's remedies.
//!
//! Both come from challenge 3's own code — its loop (`demos::challenge3::runner`) on each scenario's
//! defaults on the `plan` backing — so the book quotes what
//! `cargo run -p challenge3 -- --scenario leak|fragmentation --backend plan` prints.

use anyhow::{Result, anyhow};
use demos::challenge3::fragmentation::{self, Fragmentation};
use demos::challenge3::leak::{self, Leak};
use demos::challenge3::{Scenario, Setup};
use std::sync::OnceLock;

/// The leak scenario's settings: the lesson's network at batch 32 on 20 000 rows for 8
/// epochs, on a 4 MiB card that the flat loop fits with room to spare and the leak fills
/// within a few epochs.
pub fn leak_setup() -> Result<Setup> {
    Scenario::Leak.planned()
}

/// The fragmentation scenario's settings: two hidden layers of 400, batches of 264 000 rows
/// and a last one of 262 000, 2 epochs, on a 1400 MiB card.
pub fn fragmentation_setup() -> Result<Setup> {
    Scenario::Fragmentation.planned()
}

/// The card of a scenario's settings.
pub fn card(setup: &Setup) -> Result<u64> {
    setup
        .card()
        .ok_or_else(|| anyhow!("challenge 3's scenarios run on a card of a given size"))
}

/// The leaking and the fixed loop of [`leak_setup`], run once per process: the leak's chart,
/// its alt text and the book's table all quote them, and the leaking loop takes a few hundred
/// thousand allocator events.
pub fn leak_runs() -> Result<&'static Leak> {
    static RUNS: OnceLock<std::result::Result<Leak, String>> = OnceLock::new();
    RUNS.get_or_init(|| {
        leak_setup()
            .and_then(|setup| Ok(leak::runs(&setup)?))
            .map_err(|e| format!("{e:#}"))
    })
    .as_ref()
    .map_err(|e| anyhow!("the leak scenario: {e}"))
}

/// The fragmentation scenario's failing run and each remedy's run.
pub fn fragmentation_runs() -> Result<Fragmentation> {
    Ok(fragmentation::runs(&fragmentation_setup()?)?)
}
