//! Measuring a scheme on a group of fresh cards: two steps, as [`crate::measure`] does for
//! one card, and each card's allocator statistics, its memory by category at its peak, its
//! communication — or the card that ran out first.

use super::category::CategoryBytes;
use super::comm::CommBytes;
use super::group::{CardFailure, Group};
use super::scheme::Scheme;
use crate::data::Dataset;
use crate::device::{Device, DeviceOptions};
use crate::error::Error;
use crate::measure::STEPS;
use crate::mlp::{Batch, MlpConfig};

/// What one card used.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CardMemory {
    pub card: usize,
    /// Rows of the batch this card trained on.
    pub rows: u64,
    /// `memory_allocated()` after the last step (or the failure).
    pub allocated: u64,
    /// `memory_reserved()` then.
    pub reserved: u64,
    /// `max_memory_allocated()`.
    pub peak_allocated: u64,
    /// `max_memory_reserved()`.
    pub peak_reserved: u64,
    /// Peak of the bytes asked for, before rounding (what PyTorch's MemTracker counts).
    pub peak_requested: u64,
    /// The requested bytes live at that peak, by category.
    pub at_peak: CategoryBytes,
    pub comm: CommBytes,
}

/// A scheme on a group of cards: each card, or the failure.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GroupMemory {
    pub scheme: Scheme,
    pub cards: Vec<CardMemory>,
    /// Every card that ran out of memory, if any did (the first to fail first).
    pub failures: Vec<CardFailure>,
    pub loss: Option<f32>,
}

impl GroupMemory {
    pub fn fits(&self) -> bool {
        self.failures.is_empty()
    }

    /// The largest peak of any card (reserved: what must fit on the card).
    pub fn peak_reserved(&self) -> u64 {
        self.cards
            .iter()
            .map(|c| c.peak_reserved)
            .max()
            .unwrap_or(0)
    }

    pub fn peak_allocated(&self) -> u64 {
        self.cards
            .iter()
            .map(|c| c.peak_allocated)
            .max()
            .unwrap_or(0)
    }
}

/// Builds `config` under `scheme` on `cards` fresh devices opened with `options` and runs
/// [`STEPS`] steps of a global batch of `batch` rows. Out-of-memory is a result; a setup the
/// scheme cannot run (no cards, fewer rows than cards) is an error.
pub fn measure_group(
    options: &DeviceOptions,
    config: &MlpConfig,
    scheme: Scheme,
    cards: usize,
    batch: u64,
    seed: u64,
) -> Result<GroupMemory, Error> {
    measure_group_with(options, config, scheme, cards, batch, seed, None)
}

/// [`measure_group`] with a pipeline's micro-batches per step (`None`: the default).
pub fn measure_group_with(
    options: &DeviceOptions,
    config: &MlpConfig,
    scheme: Scheme,
    cards: usize,
    batch: u64,
    seed: u64,
    micro_batches: Option<u64>,
) -> Result<GroupMemory, Error> {
    if cards == 0 {
        return Err(Error::Setup("a group needs at least one card".into()));
    }
    if batch < cards as u64 && scheme.pipeline().is_none() {
        return Err(Error::Setup(format!(
            "a batch of {batch} rows cannot give each of {cards} cards a row"
        )));
    }
    crate::estimate::StepSetup::from_rows(config, batch)?;
    let devices = (0..cards)
        .map(|_| Device::new(options))
        .collect::<Result<Vec<_>, _>>()?;
    devices.iter().for_each(Device::start_trace);
    let executes = devices[0].info().executes;
    let data = executes.then(|| Dataset::generate(batch, seed).train);
    let rows = match &data {
        Some(split) => Batch::Data(split),
        None => Batch::Planned(batch),
    };
    let (mut failures, mut loss, mut comm) = (Vec::new(), None, vec![CommBytes::default(); cards]);
    let mut ends = vec![(0, 0); cards];
    match Group::new(&devices, config, scheme, seed) {
        Ok(mut group) => {
            if let Some(m) = micro_batches {
                group.set_micro_batches(m)?;
            }
            for _ in 0..STEPS {
                match group.train_step(rows) {
                    Ok(step) => loss = step.loss,
                    Err((Error::OutOfMemory(_), f)) => {
                        failures = f;
                        break;
                    }
                    Err((e, _)) => return Err(e),
                }
            }
            comm = group.comm_bytes();
            // Read while the group (its networks) still holds its memory.
            ends = devices
                .iter()
                .map(|d| (d.memory_allocated(), d.memory_reserved()))
                .collect();
        }
        Err((Error::OutOfMemory(_), f)) => failures = f,
        Err((e, _)) => return Err(e),
    }
    // A pipeline's every stage sees every row; the others split the batch.
    let rows = match scheme.pipeline() {
        Some(_) => vec![(0, batch); cards],
        None => crate::mlp::micro_batches(batch, cards as u64),
    };
    let cards = devices
        .iter()
        .enumerate()
        .map(|(card, d)| {
            let stats = d.memory_stats();
            CardMemory {
                card,
                rows: rows[card].1,
                allocated: ends[card].0,
                reserved: ends[card].1,
                peak_allocated: stats.allocated_bytes.all.peak,
                peak_reserved: stats.reserved_bytes.all.peak,
                peak_requested: stats.requested_bytes.all.peak,
                at_peak: CategoryBytes::at_peak(&d.take_trace()),
                comm: comm[card],
            }
        })
        .collect();
    failures.sort_by_key(|f: &CardFailure| (f.allocations, f.card));
    Ok(GroupMemory {
        scheme,
        cards,
        failures,
        loss: loss.filter(|_| executes),
    })
}

/// The fewest cards, up to `max_cards`, on which `scheme` fits `config` with a global batch
/// of `batch` rows (`None`: not even `max_cards`, or not on as many cards as the scheme can
/// use).
pub fn fewest_cards(
    options: &DeviceOptions,
    config: &MlpConfig,
    scheme: Scheme,
    batch: u64,
    max_cards: usize,
) -> Result<Option<usize>, Error> {
    fewest_cards_by(config, scheme, batch, max_cards, |cards| {
        Ok(measure_group(options, config, scheme, cards, batch, 0)?.fits())
    })
}

/// [`fewest_cards`] with `fits(cards)` answering whether a group of that size fits (a caller
/// that measured some sizes already answers those without planning them again).
pub fn fewest_cards_by(
    config: &MlpConfig,
    scheme: Scheme,
    batch: u64,
    max_cards: usize,
    mut fits: impl FnMut(usize) -> Result<bool, Error>,
) -> Result<Option<usize>, Error> {
    // A pipeline has at most one card per layer; the others at most one per row.
    let most = match scheme.pipeline() {
        Some(_) => config.layers as usize + 1,
        None => batch as usize,
    };
    for cards in 1..=max_cards.min(most) {
        if fits(cards)? {
            return Ok(Some(cards));
        }
    }
    Ok(None)
}
