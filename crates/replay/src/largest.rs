//! `--largest-batch`: the largest batch whose replay fits the card, for a trace whose bytes
//! are affine in the batch, found by the engine's search ([`largest_near`]) outward from the
//! recorded batch. It reports the boundary it checked (B fits, B + 1 does not), so an
//! allocator that fits at B + 2 again would not hide behind the search.

use crate::engine::{ReplayCard, run};
use crate::error::{Result, refuse};
use crate::source::Plan;
use gpumem::search::largest_near;

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

/// The batch `plan` was recorded at, when its largest batch can be searched: a recorded
/// trace whose bytes are affine in the batch.
pub(crate) fn searchable(plan: &Plan) -> Result<u64> {
    let Some(recorded) = plan.batch else {
        refuse!(
            Batch,
            "--largest-batch needs a trace the recorder (pytorch/record.py) wrote"
        );
    };
    if let Some(why) = &plan.not_affine {
        refuse!(
            Batch,
            "--largest-batch needs the bytes affine in the batch, and here they are not: {why}"
        );
    }
    Ok(recorded)
}

/// The largest batch of `plan` on `card`, and how many replays it took; `progress` hears of
/// each replay (how many so far, and the batch it tries).
pub(crate) fn largest(
    plan: &Plan,
    card: &ReplayCard,
    progress: &mut dyn FnMut(usize, u64),
) -> Result<(Largest, usize)> {
    let recorded = searchable(plan)?;
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
    Ok(match largest_near(MAX_BATCH, Some(recorded), &mut fits)? {
        None => (Largest::None, runs),
        Some(b) if b >= MAX_BATCH => (Largest::Unbounded, runs),
        Some(b) => (Largest::Batch(b), runs),
    })
}
