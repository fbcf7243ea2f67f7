//! Searching a monotone predicate for its last true value: the largest batch or the deepest
//! network that fits, whether measured ([`crate::measure`]) or predicted
//! ([`crate::estimate`]).

/// The largest `n` in `1..=max` for which `holds(n)`, by doubling and then bisection
/// (`O(log n)` calls, small values first). Assumes `holds` is true up to some `n` and false
/// after it, as "fits" is in batch size and depth.
pub fn largest_where<E>(
    max: u64,
    mut holds: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Option<u64>, E> {
    if max == 0 || !holds(1)? {
        return Ok(None);
    }
    // Double until it fails (or the limit is reached), then bisect the last doubling.
    let (mut good, mut bad) = (1u64, None);
    while bad.is_none() && good < max {
        let next = good.saturating_mul(2).min(max);
        if holds(next)? {
            good = next;
        } else {
            bad = Some(next);
        }
    }
    if let Some(mut bad) = bad {
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if holds(mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    Ok(Some(good))
}
