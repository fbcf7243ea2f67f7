//! Both cores on large tensors, without a pool: a kernel's output is cut into one contiguous
//! piece per core, each piece is computed by one thread (scoped to the call, so nothing
//! outlives it), and every value is computed in the same order as on one thread — results do
//! not depend on the thread count.

use std::sync::OnceLock;

/// Values below which one thread is faster: starting a thread costs tens of microseconds,
/// about what one core needs to stream this many float32 values.
pub(super) const MIN_PARALLEL: usize = 1 << 17;

/// The cores this process may use.
pub(super) fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `f(start, piece)` over `out` cut into pieces of whole `unit`s (rows, say), one per
/// core, when `parallel`; else once over all of it. `start` is the
/// piece's first index in `out`.
pub(super) fn for_pieces<T: Send>(
    out: &mut [T],
    unit: usize,
    parallel: bool,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let unit = unit.max(1);
    let units = out.len() / unit;
    let n = threads().min(units);
    if n < 2 || !parallel {
        f(0, out);
        return;
    }
    let per = units.div_ceil(n) * unit;
    std::thread::scope(|s| {
        let mut rest = out;
        let mut start = 0;
        let f = &f;
        let mut mine = None;
        while !rest.is_empty() {
            let take = per.min(rest.len());
            let (piece, tail) = rest.split_at_mut(take);
            if mine.is_none() {
                // The calling thread takes the first piece itself.
                mine = Some((start, piece));
            } else {
                s.spawn(move || f(start, piece));
            }
            start += take;
            rest = tail;
        }
        if let Some((start, piece)) = mine {
            f(start, piece);
        }
    });
}

/// [`for_pieces`] for elementwise kernels: pieces of any length.
pub(super) fn elementwise<T: Send>(out: &mut [T], f: impl Fn(usize, &mut [T]) + Sync) {
    let parallel = out.len() >= MIN_PARALLEL;
    for_pieces(out, 1, parallel, f);
}

/// [`elementwise`] for kernels with three outputs of one length (Adam's parameter and
/// moments), cut at the same places.
pub(super) fn elementwise3<T: Send>(
    a: &mut [T],
    b: &mut [T],
    c: &mut [T],
    f: impl Fn(usize, &mut [T], &mut [T], &mut [T]) + Sync,
) {
    let len = a.len().min(b.len()).min(c.len());
    let n = threads().min(len);
    if n < 2 || len < MIN_PARALLEL {
        f(0, a, b, c);
        return;
    }
    let per = len.div_ceil(n);
    std::thread::scope(|s| {
        let f = &f;
        let (a0, mut a) = a.split_at_mut(per);
        let (b0, mut b) = b.split_at_mut(per);
        let (c0, mut c) = c.split_at_mut(per);
        let mut start = per;
        while start < len {
            let take = per.min(len - start);
            let (pa, ra) = a.split_at_mut(take);
            let (pb, rb) = b.split_at_mut(take);
            let (pc, rc) = c.split_at_mut(take);
            s.spawn(move || f(start, pa, pb, pc));
            (a, b, c) = (ra, rb, rc);
            start += take;
        }
        f(0, a0, b0, c0);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_written_once_with_its_index() {
        for len in [
            0,
            1,
            7,
            MIN_PARALLEL - 1,
            MIN_PARALLEL,
            MIN_PARALLEL * 3 + 5,
        ] {
            let mut v = vec![0usize; len];
            elementwise(&mut v, |start, piece| {
                piece
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x += start + i)
            });
            assert!(v.iter().enumerate().all(|(i, &x)| x == i), "len {len}");
        }
    }

    #[test]
    fn three_outputs_are_cut_alike() {
        for len in [5, MIN_PARALLEL * 2 + 1] {
            let (mut a, mut b, mut c) = (vec![0; len], vec![0; len], vec![0; len]);
            elementwise3(&mut a, &mut b, &mut c, |start, a, b, c| {
                assert!(a.len() == b.len() && b.len() == c.len());
                for (i, ((a, b), c)) in a.iter_mut().zip(b).zip(c).enumerate() {
                    (*a, *b, *c) = (start + i, start + i + 1, start + i + 2);
                }
            });
            assert!((0..len).all(|i| (a[i], b[i], c[i]) == (i, i + 1, i + 2)));
        }
    }

    #[test]
    fn pieces_are_whole_units() {
        let mut v = vec![0u32; 3 * MIN_PARALLEL];
        for_pieces(&mut v, 3, true, |start, piece| {
            assert_eq!((start % 3, piece.len() % 3), (0, 0));
        });
    }
}
