//! What must fit on the card (`monitoring.md`): not the reserved peak. Before it reports
//! out-of-memory the allocator gives its entirely free cached segments back and asks again
//! (the allocator page's rule 7, PyTorch's `release_cached_blocks` in `malloc`), so a run
//! whose reserved memory grows past a card on a larger one can still fit on it. Shown with
//! one engine run: the lesson's network trained one step at half the batch, then one at the
//! largest batch that fits the lesson's card (a batch that grows, as in a batch-size
//! warm-up: the half-batch segments are too small for the full batch's tensors), planned on
//! a card without limit, and the smallest card it fits, found by the engine's search.

use crate::data::{LESSON_WIDTH, SEED};
use anyhow::{Result, ensure};
use gpumem::lesson::{UNLIMITED_BYTES, planning_device};
use gpumem::measure::largest_where;
use gpumem::mlp::{Batch, Mlp, MlpConfig};
use gpumem::size::format_bytes;
use gpumem::{Device, Error};
use std::sync::OnceLock;

/// The search's step: cards are tried to the MiB (an input we chose).
const MIB: u64 = 1 << 20;

/// The first step's share of the batch (an input we chose): half.
const FIRST_STEP_DIVISOR: u64 = 2;

/// The run: its batches, its peaks on a card without limit, the smallest card it fits, and
/// how often the allocator gave its cache back and retried there.
#[derive(Debug, Clone, Copy)]
pub struct MustFit {
    pub first_rows: u64,
    pub rows: u64,
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    pub smallest_card: u64,
    pub retries: u64,
}

/// What the run used on a tensors-only card of `capacity` bytes: peak allocated, peak
/// reserved, retries; `None` if it ran out of memory.
fn run(first_rows: u64, rows: u64, capacity: u64) -> Result<Option<(u64, u64, u64)>> {
    let device = Device::new(&planning_device(capacity))?;
    let steps = || -> Result<(), Error> {
        let mut mlp = Mlp::new(&device, &MlpConfig::lesson(LESSON_WIDTH), SEED)?;
        for r in [first_rows, rows] {
            mlp.train_step(Batch::Planned(r))?;
        }
        Ok(())
    };
    match steps() {
        Ok(()) => {
            let s = device.memory_stats();
            Ok(Some((
                s.allocated_bytes.all.peak,
                s.reserved_bytes.all.peak,
                s.num_alloc_retries,
            )))
        }
        Err(Error::OutOfMemory(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The run, computed once per process.
pub fn must_fit() -> Result<MustFit> {
    static RUN: OnceLock<std::result::Result<MustFit, String>> = OnceLock::new();
    RUN.get_or_init(|| compute().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow::anyhow!("what must fit: {e}"))
}

fn compute() -> Result<MustFit> {
    let rows = super::super::largest_batch()?.rows;
    let first_rows = rows / FIRST_STEP_DIVISOR;
    let Some((peak_allocated, peak_reserved, _)) = run(first_rows, rows, UNLIMITED_BYTES)? else {
        anyhow::bail!("the run does not fit a card without limit");
    };
    // The largest card (in MiB) it does not fit; the smallest that fits is one MiB more.
    let limit = peak_reserved.div_ceil(MIB);
    let too_small = largest_where(limit, |mib| {
        run(first_rows, rows, mib * MIB).map(|r| r.is_none())
    })?
    .unwrap_or(0);
    let smallest_card = (too_small + 1) * MIB;
    let Some((_, _, retries)) = run(first_rows, rows, smallest_card)? else {
        anyhow::bail!(
            "the search's answer, {}, does not fit",
            format_bytes(smallest_card)
        );
    };
    let r = MustFit {
        first_rows,
        rows,
        peak_allocated,
        peak_reserved,
        smallest_card,
        retries,
    };
    ensure!(
        r.peak_allocated <= r.smallest_card && r.smallest_card < r.peak_reserved && r.retries > 0,
        "the smallest card ({}, {} retries) is not between the peaks ({} allocated, {} \
         reserved): the page's bracket has no example here",
        format_bytes(r.smallest_card),
        r.retries,
        format_bytes(r.peak_allocated),
        format_bytes(r.peak_reserved)
    );
    Ok(r)
}

/// The page's sentence: the run, its peaks on a card without limit, the smallest card.
pub fn sentence() -> Result<String> {
    let r = must_fit()?;
    let times = if r.retries == 1 {
        "once"
    } else {
        "more than once"
    };
    Ok(format!(
        "An engine run shows the bracket. The lesson's network trains one step at {} rows, \
         then one at {}. On a card without limit it peaks at {} allocated and {} reserved (the \
         first step's segments are too small for the second). Yet it fits a card of only {}: \
         there the allocator gives its unused cache back {times} and retries.\n",
        crate::style::grouped(r.first_rows),
        crate::style::grouped(r.rows),
        format_bytes(r.peak_allocated),
        format_bytes(r.peak_reserved),
        format_bytes(r.smallest_card),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The card the search found is the smallest: one MiB less does not fit.
    #[test]
    fn one_mib_less_does_not_fit() {
        let r = must_fit().unwrap();
        assert!(
            run(r.first_rows, r.rows, r.smallest_card - MIB)
                .unwrap()
                .is_none()
        );
        assert!(
            run(r.first_rows, r.rows, r.smallest_card)
                .unwrap()
                .is_some()
        );
    }
}
