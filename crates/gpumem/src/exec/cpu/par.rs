//! Both cores on large tensors, without a pool: a kernel's output is cut into a few
//! contiguous pieces per core, the threads (scoped to the call, so nothing outlives it) take
//! the pieces in turn — a core slowed by another process takes fewer — and each value is
//! computed by one thread in the order one thread alone would use: results do not depend on
//! the thread count or on which thread took which piece.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Values below which one thread is faster: starting a thread costs tens of microseconds,
/// about what one core needs to stream this many float32 values.
pub(super) const MIN_PARALLEL: usize = 1 << 17;
/// Pieces per thread: enough that a busy core's share moves to the free one, few enough
/// that each piece is still long.
pub(super) const PIECES_PER_THREAD: usize = 4;

/// The cores this process may use.
pub(super) fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `f(i)` for every `i` in `0..pieces`, on `threads` threads (the caller's among them)
/// that each take the next piece not yet taken.
pub(super) fn shared(pieces: usize, threads: usize, f: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= pieces {
                break;
            }
            f(i);
        }
    };
    if threads < 2 || pieces < 2 {
        return work();
    }
    std::thread::scope(|s| {
        for _ in 1..threads.min(pieces) {
            s.spawn(work);
        }
        work();
    });
}

/// Runs `f(start, piece)` over `out` cut into pieces of whole `unit`s (rows, say), shared
/// by every core, when `parallel`; else once over all of it. `start` is the piece's first
/// index in `out`.
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
    let per = units.div_ceil(n * PIECES_PER_THREAD) * unit;
    let pieces: Vec<_> = out
        .chunks_mut(per)
        .enumerate()
        .map(|(i, piece)| Mutex::new(Some((i * per, piece))))
        .collect();
    shared(pieces.len(), n, |i| {
        let taken = pieces[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((start, piece)) = taken {
            f(start, piece);
        }
    });
}

/// [`for_pieces`] for elementwise kernels: pieces of any length.
pub(crate) fn elementwise<T: Send>(out: &mut [T], f: impl Fn(usize, &mut [T]) + Sync) {
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
    let per = len.div_ceil(n * PIECES_PER_THREAD);
    let pieces: Vec<_> = a
        .chunks_mut(per)
        .zip(b.chunks_mut(per))
        .zip(c.chunks_mut(per))
        .enumerate()
        .map(|(i, ((a, b), c))| Mutex::new(Some((i * per, a, b, c))))
        .collect();
    shared(pieces.len(), n, |i| {
        let taken = pieces[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((start, a, b, c)) = taken {
            f(start, a, b, c);
        }
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
