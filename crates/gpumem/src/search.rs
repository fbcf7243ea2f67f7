//! Searching a monotone predicate for its last true value: the largest batch or the deepest
//! network that fits, whether measured by running steps or predicted by the memory
//! equation (this module knows neither: the floors above pass it their predicate).

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
    if let Some(bad) = bad {
        good = bisect(good, bad, &mut holds)?;
    }
    Ok(Some(good))
}

/// [`largest_where`] searched outward from a `guess` (an equation's answer, say): where the
/// guess is right, two calls confirm it; where it is off, the steps double away from it, so
/// the cost grows with the guess's error, not with the answer.
pub fn largest_near<E>(
    max: u64,
    guess: Option<u64>,
    mut holds: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Option<u64>, E> {
    if max == 0 {
        return Ok(None);
    }
    let g = guess.unwrap_or(1).clamp(1, max);
    // Bracket: `good` holds (0: nothing does), `bad` does not.
    let (mut good, mut bad) = (g, g);
    let mut step = 1u64;
    if holds(g)? {
        loop {
            let next = good.saturating_add(step).min(max);
            if next == good {
                return Ok(Some(good));
            }
            if !holds(next)? {
                bad = next;
                break;
            }
            good = next;
            step = step.saturating_mul(2);
        }
    } else {
        loop {
            good = bad.saturating_sub(step);
            if good == 0 || holds(good)? {
                break;
            }
            bad = good;
            step = step.saturating_mul(2);
        }
    }
    let good = bisect(good, bad, &mut holds)?;
    Ok((good > 0).then_some(good))
}

/// Narrows `good < bad` (`holds(good)`, or `good == 0`; not `holds(bad)`) to neighbours and
/// returns the last that holds.
fn bisect<E>(
    mut good: u64,
    mut bad: u64,
    holds: &mut impl FnMut(u64) -> Result<bool, E>,
) -> Result<u64, E> {
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if holds(mid)? {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Ok(good)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// Every threshold, every guess (and none), small limits: both searches find the last
    /// value that holds, and the guided one confirms a right guess in two calls.
    #[test]
    fn both_searches_find_the_threshold_from_any_guess() {
        for max in 0..40u64 {
            for threshold in 0..=max {
                let holds = |n: u64| Ok::<_, Infallible>(n <= threshold);
                let want = (threshold > 0).then_some(threshold);
                assert_eq!(largest_where(max, holds), Ok(want));
                for guess in std::iter::once(None).chain((0..=max + 2).map(Some)) {
                    let mut calls = 0;
                    let found = largest_near(max, guess, |n| {
                        calls += 1;
                        holds(n)
                    });
                    assert_eq!(
                        found,
                        Ok(want),
                        "max {max} threshold {threshold} guess {guess:?}"
                    );
                    if guess == want && threshold > 0 && threshold < max {
                        assert_eq!(calls, 2, "a right guess costs two calls");
                    }
                }
            }
        }
    }
}
