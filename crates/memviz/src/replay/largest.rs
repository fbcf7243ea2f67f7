//! `--largest-batch`: the largest batch whose replay fits the card, for a trace whose bytes
//! are affine in the batch. Doubling from the recorded batch, then halving the gap: about
//! two replays per bit of the answer. It reports the boundary it checked (B fits, B + 1 does
//! not), so an allocator that fits at B + 2 again would not hide behind the search.

use super::engine::{ReplayCard, run};
use super::source::Plan;
use anyhow::{Result, bail};

/// No search goes past this many rows (2^40): a step that still fits there grows by nothing
/// that matters.
pub const MAX_BATCH: u64 = 1 << 40;

/// The answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Largest {
    /// `batch` fits and `batch + 1` does not.
    Batch(u64),
    /// Not even one row fits.
    None,
    /// Nothing grows with the batch (or it fits at [`MAX_BATCH`]): every batch fits.
    Unbounded,
}

/// The largest batch of `plan` on `card`, and how many replays it took; `progress` hears of
/// each replay (how many so far, and the batch it tries).
pub fn largest(
    plan: &Plan,
    card: &ReplayCard,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<(Largest, usize)> {
    let Some(recorded) = plan.batch else {
        bail!("--largest-batch needs a trace the recorder (pytorch/record.py) wrote");
    };
    if let Some(why) = &plan.not_affine {
        bail!("--largest-batch needs the bytes affine in the batch, and here they are not: {why}");
    }
    let mut runs = 0;
    let mut fits = |b: u64| -> Result<bool> {
        runs += 1;
        progress(runs, b);
        Ok(run(plan, b, card, false, &mut |_, _| {})?.fits())
    };
    if !plan.grows() {
        let answer = if fits(recorded)? {
            Largest::Unbounded
        } else {
            Largest::None
        };
        return Ok((answer, runs));
    }
    // A batch that fits (lo) and one that does not (hi).
    let (mut lo, mut hi) = if fits(recorded)? {
        let mut lo = recorded;
        loop {
            let next = lo.saturating_mul(2).min(MAX_BATCH);
            if next == lo {
                return Ok((Largest::Unbounded, runs));
            }
            if !fits(next)? {
                break (lo, next);
            }
            lo = next;
        }
    } else if !fits(1)? {
        return Ok((Largest::None, runs));
    } else {
        (1, recorded)
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok((Largest::Batch(lo), runs))
}
