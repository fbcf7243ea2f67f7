//! Where each band of the per-tensor timeline goes, in time and memory bounded by what is
//! drawn rather than by the trace.
//!
//! A real run's trace has a million entries and tens of thousands of live tensors; drawing
//! every band and moving every band above each freed one is (entries × live tensors) work
//! and points: 18 GB for such a run. So, as PyTorch's viewer does, at most
//! [`Bounds::max_shapes`] shapes are drawn: the largest tensors alive at the peak, then the
//! largest of the rest; every other tensor alive in the window is summarised as one grey
//! band on top of the drawn ones, whose top is the bytes in all live tensors, so the stack's
//! height (and its peak) stays exact. A window longer than [`MAX_STEPS`] entries is drawn in
//! [`COLUMNS`] columns: a band's bottom edge moves at most once per column (where a drawn
//! band below it was freed), so the points drawn are bounded by shapes × columns. Up to
//! [`MAX_STEPS`] entries and [`Bounds::max_shapes`] bands, every entry is its own column and
//! every band is drawn: exactly the stacking the book's figures show.

use gpumem::snapshot::Timeline;
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// Longer traces are drawn over their newest this many entries by default; a longer window
/// is drawn in [`COLUMNS`] columns.
pub const MAX_STEPS: usize = 4000;
/// Columns a window longer than [`MAX_STEPS`] is drawn in: more than the plot's pixels.
pub const COLUMNS: usize = 1000;
/// Shapes drawn by default, as PyTorch's viewer (`MemoryViz.js` draws 15,000 allocations).
pub const MAX_SHAPES: usize = 15_000;

/// What to draw of a timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Entries `from..to` of the x axis.
    pub window: (usize, usize),
    /// Bands drawn at most, the summary of the rest counted as one.
    pub max_shapes: usize,
}

impl Bounds {
    /// The newest [`MAX_STEPS`] entries, at most [`MAX_SHAPES`] shapes.
    pub fn default_for(t: &Timeline) -> Bounds {
        Bounds {
            window: window(t),
            max_shapes: MAX_SHAPES,
        }
    }
}

/// The entries drawn by default: the newest [`MAX_STEPS`].
pub fn window(t: &Timeline) -> (usize, usize) {
    (t.steps.saturating_sub(MAX_STEPS), t.steps)
}

/// One band as drawn: where its bottom edge is, as steps `(entry, bytes below it)` from the
/// entry where it appears to the one where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub band: usize,
    pub bottom: Vec<(usize, u64)>,
    pub end: usize,
}

/// A timeline laid out within its bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub window: (usize, usize),
    /// Entries per column: 1 up to [`MAX_STEPS`] entries.
    pub per_column: usize,
    /// The bands drawn, in stacking order (oldest at the bottom).
    pub placed: Vec<Placed>,
    /// Bands alive in the window.
    pub alive: usize,
    /// Bands alive in the window but not drawn.
    pub summarised: usize,
    /// The summary's edges, one `(x, bottom, top)` per column, empty when nothing is
    /// summarised: its bottom is the drawn bands' top at the column's end, its top the most
    /// bytes in all live tensors within the column.
    pub rest: Vec<(usize, u64, u64)>,
    /// Where the requested bytes in live tensors peak in the window (the entry after which
    /// they do), and how high.
    pub peak: (usize, u64),
}

/// Stacks every band alive in `from..to`, oldest at the bottom: each band's bottom edge over
/// time, one point per entry where it moves.
pub fn stack(t: &Timeline, window: (usize, usize)) -> Vec<Placed> {
    layout(
        t,
        Bounds {
            window,
            max_shapes: usize::MAX,
        },
    )
    .placed
}

/// Lays `t` out within `bounds` (see the module).
pub fn layout(t: &Timeline, bounds: Bounds) -> Layout {
    let to = bounds.window.1.min(t.steps);
    let from = bounds.window.0.min(to);
    let alive = |b: &gpumem::snapshot::Band| b.end.is_none_or(|e| e > from) && b.start <= to;
    let candidates: Vec<usize> = (0..t.bands.len()).filter(|&i| alive(&t.bands[i])).collect();
    // `requested[k]` counts the bytes after `k` entries; the stack at x after entry x.
    let peak = t.peak((from, to));
    let drawn = choose(t, &candidates, bounds.max_shapes, peak.0);
    let peak = (peak.0.saturating_sub(1).max(from), peak.1);
    let per_column = if to - from <= MAX_STEPS {
        1
    } else {
        (to - from).div_ceil(COLUMNS)
    };
    let mut order: Vec<usize> = candidates.iter().copied().filter(|&i| drawn[i]).collect();
    order.sort_by_key(|&i| (t.bands[i].start.max(from), i));
    let mut ends: Vec<(usize, usize)> = order
        .iter()
        .map(|&i| (t.bands[i].end.unwrap_or(to).min(to), i))
        .collect();
    ends.sort_unstable();
    // The summarised bands' bytes, as changes per entry of the window.
    let summarised = candidates.len() - order.len();
    let mut rest_delta = vec![0i128; if summarised > 0 { to - from + 1 } else { 0 }];
    for &i in candidates.iter().filter(|&&i| !drawn[i]) {
        let b = &t.bands[i];
        rest_delta[b.start.max(from) - from] += i128::from(b.bytes);
        if let Some(e) = b.end.filter(|&e| e <= to) {
            rest_delta[e - from] -= i128::from(b.bytes);
        }
    }
    let mut placed: Vec<Placed> = Vec::with_capacity(order.len());
    let mut slot = vec![usize::MAX; t.bands.len()];
    let mut live: BTreeSet<usize> = BTreeSet::new(); // indices into `placed`: stacking order
    let (mut drawn_total, mut rest_total, mut column_top) = (0u64, 0i128, 0u64);
    let mut rest = Vec::new();
    let (mut next_start, mut next_end, mut moved) = (0, 0, false);
    for step in from..=to {
        // Frees at this entry first, then allocations, as the trace orders them.
        while next_end < ends.len() && ends[next_end].0 == step {
            let p = slot[ends[next_end].1];
            next_end += 1;
            if live.remove(&p) {
                placed[p].end = step;
                drawn_total -= t.bands[placed[p].band].bytes;
                moved = true;
            }
        }
        while next_start < order.len() && t.bands[order[next_start]].start.max(from) == step {
            let i = order[next_start];
            next_start += 1;
            slot[i] = placed.len();
            live.insert(placed.len());
            placed.push(Placed {
                band: i,
                bottom: vec![(step, drawn_total)],
                end: to,
            });
            drawn_total += t.bands[i].bytes;
        }
        if summarised > 0 {
            rest_total += rest_delta[step - from];
            let all = drawn_total + u64::try_from(rest_total.max(0)).unwrap_or(u64::MAX);
            column_top = column_top.max(all);
        }
        let column_start = step - (step - from) % per_column;
        if step == to || (step - from + 1).is_multiple_of(per_column) {
            if moved {
                restack(t, &mut placed, &live, column_start);
                moved = false;
            }
            if summarised > 0 {
                rest.push((column_start, drawn_total, column_top.max(drawn_total)));
                column_top = 0;
            }
        }
    }
    Layout {
        window: (from, to),
        per_column,
        placed,
        alive: candidates.len(),
        summarised,
        rest,
        peak,
    }
}

/// Which bands to draw: all, when they fit; else the largest half of the shapes among the
/// bands alive at the peak, then the largest of the rest, one shape kept for the summary.
fn choose(t: &Timeline, candidates: &[usize], max_shapes: usize, peak: usize) -> Vec<bool> {
    let mut drawn = vec![false; t.bands.len()];
    if candidates.len() <= max_shapes {
        candidates.iter().for_each(|&i| drawn[i] = true);
        return drawn;
    }
    let k = max_shapes.saturating_sub(1);
    let by_size = |v: &mut Vec<usize>| v.sort_unstable_by_key(|&i| (Reverse(t.bands[i].bytes), i));
    let b = &t.bands;
    let mut at_peak: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&i| (b[i].start < peak || b[i].start == 0) && b[i].end.is_none_or(|e| e >= peak))
        .collect();
    by_size(&mut at_peak);
    at_peak.iter().take(k / 2).for_each(|&i| drawn[i] = true);
    let mut others: Vec<usize> = candidates.iter().copied().filter(|&i| !drawn[i]).collect();
    by_size(&mut others);
    let room = k - at_peak.len().min(k / 2);
    others.iter().take(room).for_each(|&i| drawn[i] = true);
    drawn
}

/// After drawn bands were freed in a column: each live band's bottom is the bytes of the
/// live bands below it; where it moved, a point at the column's start (or at the band's
/// last point, for one that appeared within the column).
fn restack(t: &Timeline, placed: &mut [Placed], live: &BTreeSet<usize>, x: usize) {
    let mut below = 0u64;
    for &p in live {
        let bottom = &mut placed[p].bottom;
        let Some(&(last_x, last_y)) = bottom.last() else {
            continue;
        };
        if last_y != below {
            if last_x >= x {
                // Appeared (or already moved) within this column: where it ends up.
                if let Some(last) = bottom.last_mut() {
                    last.1 = below;
                }
            } else {
                bottom.push((x, below));
            }
        }
        below += t.bands[placed[p].band].bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumem::snapshot::Band;

    /// A timeline of `bands`, its requested bytes counted from them.
    fn timeline(bands: Vec<Band>, steps: usize) -> Timeline {
        // Alive at k: allocated before entry k (or from the start), not freed before it.
        let mut delta = vec![0i64; steps + 2];
        for b in &bands {
            delta[if b.start == 0 { 0 } else { b.start + 1 }] += b.bytes as i64;
            if let Some(e) = b.end {
                delta[e + 1] -= b.bytes as i64;
            }
        }
        let requested: Vec<u64> = delta[..=steps]
            .iter()
            .scan(0i64, |acc, d| {
                *acc += d;
                Some(*acc as u64)
            })
            .collect();
        Timeline {
            bands,
            steps,
            reserved: vec![0; steps + 1],
            requested,
        }
    }

    fn band(bytes: u64, start: usize, end: Option<usize>) -> Band {
        Band {
            name: format!("t{bytes}"),
            bytes,
            addr: 0,
            start,
            end,
            frames: Default::default(),
        }
    }

    #[test]
    fn past_the_bound_the_largest_and_the_peak_are_drawn_and_the_rest_summarised() {
        // 60 small tensors of 1..=60 bytes that live for 2 entries each, one at a time; a
        // peak at entry 100 made by 30 tensors of 5 bytes; one huge tensor early on.
        let mut bands: Vec<Band> = (0..60)
            .map(|i| band(1 + i as u64, i, Some(i + 2)))
            .collect();
        bands.extend((0..30).map(|i| band(5, 70 + i, Some(101))));
        bands.push(band(100, 1, Some(3)));
        let t = timeline(bands, 120);
        let l = layout(
            &t,
            Bounds {
                window: (0, 120),
                max_shapes: 21,
            },
        );
        assert_eq!(
            t.peak((0, 120)).0,
            100,
            "after the 30 tensors' last alloc, entry 99"
        );
        assert_eq!(l.peak.0, 99, "the stack at x holds what entry x left");
        assert_eq!(l.placed.len(), 20, "one shape is the summary");
        assert_eq!(l.summarised, 91 - 20);
        let drawn: Vec<u64> = l.placed.iter().map(|p| t.bands[p.band].bytes).collect();
        assert!(drawn.contains(&100), "the largest tensor is drawn");
        let at_peak = l.placed.iter().filter(|p| p.band >= 60 && p.band < 90);
        assert_eq!(
            at_peak.count(),
            10,
            "half the shapes go to the peak's tensors"
        );
        // The stack's top at the peak is exact: drawn and summarised together.
        let (_, bottom, top) = l.rest[l.peak.0];
        assert_eq!(top, l.peak.1);
        assert_eq!(bottom, 50, "the 10 drawn tensors of the peak");
    }

    #[test]
    fn a_long_window_moves_each_band_at_most_once_a_column() {
        // Tensors alive before the trace, freed one every 3 entries, under 50 that live
        // throughout: each of those moves at every free.
        let steps = 30 * MAX_STEPS;
        let mut bands: Vec<Band> = (0..steps / 3)
            .map(|i| band(7, 0, Some(3 * i + 2)))
            .collect();
        bands.extend((0..50).map(|i| band(100 + i, 1, None)));
        let t = timeline(bands, steps);
        let l = layout(
            &t,
            Bounds {
                window: (0, steps),
                max_shapes: usize::MAX,
            },
        );
        assert_eq!(l.per_column, steps.div_ceil(COLUMNS));
        let most = l.placed.iter().map(|p| p.bottom.len()).max().unwrap_or(0);
        assert!(most <= COLUMNS + 1, "{most} points for one band");
        assert!(most > COLUMNS / 2, "it does move: {most}");
    }
}
