//! `C = op(A)·op(B) (+ bias)` through `matrixmultiply`, on both cores for large products.
//!
//! The product is cut along the longer side of C into a few pieces per core, shared by the
//! cores (`par::shared`). matrixmultiply blocks the shared dimension k the same way whatever
//! m and n are, so every value of C is summed in the same order on one thread or several
//! (the tests below check it bit for bit). The bias is added block by block right after its
//! rows are made, while they are in cache.

use super::super::compute::Compute;
use super::super::spec::Matmul;
use super::HostView;
use super::{dispatch, load, par, with_mut};
use crate::error::Error;

/// Multiply-adds (m·n·k) plus values written (m·n) below which one thread is faster.
const MIN_PARALLEL_WORK: usize = 1 << 21;
/// Bytes of C's rows made before the bias is added to them: well inside a core's L2.
const BIAS_BLOCK_BYTES: usize = 128 << 10;

/// A matrix in memory: its first value and its row and column strides.
#[derive(Clone, Copy)]
struct View<C> {
    ptr: *const C,
    rs: isize,
    cs: isize,
}

impl<C> View<C> {
    /// The view from row `r`, column `c` on.
    fn at(self, r: usize, c: usize) -> View<C> {
        View {
            ptr: self
                .ptr
                .wrapping_offset(r as isize * self.rs + c as isize * self.cs),
            ..self
        }
    }
}

/// One product: `op(A)` is m×k, `op(B)` k×n, C m×n row-major.
#[derive(Clone, Copy)]
struct Product<C> {
    m: usize,
    k: usize,
    n: usize,
    a: View<C>,
    b: View<C>,
}

// SAFETY: a `Product` only reads through its pointers, into inputs that outlive the scoped
// threads it is handed to (they are borrowed by `run` for the whole call).
unsafe impl<C: Sync> Send for Product<C> {}
// SAFETY: as above: shared reads only.
unsafe impl<C: Sync> Sync for Product<C> {}

impl<C: Compute> Product<C> {
    /// Rows `rows` and columns `cols` of C into `c`, which holds those rows (row stride `n`,
    /// first value at row `rows.start`, column `cols.start`), then `bias` added.
    ///
    /// # Safety
    /// `c` must be valid for writes of the given rows and columns, with no other view of them.
    unsafe fn block(
        self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        c: *mut C,
        bias: Option<&[C]>,
    ) {
        let (m, n) = (rows.len(), cols.len());
        let block_rows = match bias {
            Some(_) => (BIAS_BLOCK_BYTES / (n.max(1) * size_of::<C>())).max(1),
            None => m.max(1),
        };
        let mut r = 0;
        while r < m {
            let h = block_rows.min(m - r);
            let (a, b) = (self.a.at(rows.start + r, 0), self.b.at(0, cols.start));
            let cr = c.wrapping_add(r * self.n);
            // SAFETY: A's rows and B's columns lie inside the inputs (`a`/`b` are m×k and k×n
            // views), and C's are this call's to write, as the caller promised.
            unsafe {
                C::gemm(
                    h,
                    self.k,
                    n,
                    a.ptr,
                    a.rs,
                    a.cs,
                    b.ptr,
                    b.rs,
                    b.cs,
                    C::zero(),
                    cr,
                    self.n as isize,
                )
            };
            if let Some(bias) = bias {
                for i in 0..h {
                    // SAFETY: row i of the block, columns `cols`: written just above.
                    let row = unsafe { std::slice::from_raw_parts_mut(cr.add(i * self.n), n) };
                    let bias = &bias[cols.clone()];
                    row.iter_mut().zip(bias).for_each(|(c, &b)| *c += b);
                }
            }
            r += h;
        }
    }

    /// All of C into `c`, on `threads` threads when the product is large enough.
    fn run(self, c: &mut [C], bias: Option<&[C]>, threads: usize) {
        let work = self.m * self.n * (self.k + 1);
        let (m, n) = (self.m, self.n);
        let cp = SendPtr(c.as_mut_ptr());
        let long = m.max(n);
        let t = if work < MIN_PARALLEL_WORK {
            1
        } else {
            threads.min(long).max(1)
        };
        let pieces = if t == 1 {
            1
        } else {
            (t * par::PIECES_PER_THREAD).min(long)
        };
        let piece = long.div_ceil(pieces);
        let job = move |i: usize| {
            let lo = (i * piece).min(long);
            let hi = ((i + 1) * piece).min(long);
            let (rows, cols) = if m >= n {
                (lo..hi, 0..n)
            } else {
                (0..m, lo..hi)
            };
            let start = cp.at(rows.start * n + cols.start);
            // SAFETY: the pieces are disjoint row ranges (or column ranges) of C, which `c`
            // borrows mutably for the whole call.
            unsafe { self.block(rows, cols, start, bias) };
        };
        par::shared(pieces, t, job);
    }
}

/// C's first value, handed to the threads that write disjoint parts of it.
#[derive(Clone, Copy)]
struct SendPtr<C>(*mut C);

impl<C> SendPtr<C> {
    /// The value `i` places on (a method, so that closures capture the whole `SendPtr`).
    fn at(self, i: usize) -> *mut C {
        self.0.wrapping_add(i)
    }
}
// SAFETY: each thread writes its own part of C (see `Product::run`).
unsafe impl<C: Send> Send for SendPtr<C> {}
// SAFETY: as above.
unsafe impl<C: Send> Sync for SendPtr<C> {}

pub fn matmul(
    spec: Matmul,
    a: &HostView,
    b: &HostView,
    c: &HostView,
    bias: Option<&HostView>,
) -> Result<(), Error> {
    fn run<C: Compute>(
        spec: Matmul,
        a: &HostView,
        b: &HostView,
        c: &HostView,
        bias: Option<&HostView>,
    ) -> Result<(), Error> {
        let (m, n) = (c.rows() as usize, c.cols() as usize);
        let k = if spec.trans_a { a.rows() } else { a.cols() } as usize;
        let (av, bv) = (load::<C>(a)?, load::<C>(b)?);
        let bias = bias.map(load::<C>).transpose()?;
        let product = product(spec, m, k, n, av.as_ptr(), bv.as_ptr());
        with_mut::<C, _>(c, |cv| product.run(cv, bias.as_deref(), par::threads()))
    }
    dispatch!(run, [a, b, c], spec, a, b, c, bias)
}

/// The product of the stored row-major A and B under `spec`'s transposes: strides make them
/// free.
fn product<C>(spec: Matmul, m: usize, k: usize, n: usize, a: *const C, b: *const C) -> Product<C> {
    let (rs_a, cs_a) = if spec.trans_a {
        (1, m as isize)
    } else {
        (k as isize, 1)
    };
    let (rs_b, cs_b) = if spec.trans_b {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    Product {
        m,
        k,
        n,
        a: View {
            ptr: a,
            rs: rs_a,
            cs: cs_a,
        },
        b: View {
            ptr: b,
            rs: rs_b,
            cs: cs_b,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i * 7919 + seed) % 1013) as f32 - 506.0) / 97.0)
            .collect()
    }

    /// Every form and a skinny shape of the lesson's: the cut product equals the whole one
    /// bit for bit, with and without a bias.
    #[test]
    fn pieces_sum_in_the_same_order() {
        let shapes = [
            (4096, 2, 300),
            (300, 2, 4096),
            (2, 3000, 700),
            (700, 3000, 2),
        ];
        for (m, k, n) in shapes.into_iter().chain([(300, 50, 200)]) {
            for (trans_a, trans_b) in [(false, false), (true, false), (false, true)] {
                let (a, b, bias) = (values(m * k, 1), values(k * n, 2), values(n, 3));
                let spec = Matmul { trans_a, trans_b };
                let p = product(spec, m, k, n, a.as_ptr(), b.as_ptr());
                for bias in [None, Some(&bias[..])] {
                    let mut one = vec![0f32; m * n];
                    p.run(&mut one, bias, 1);
                    for threads in [2, 3] {
                        let mut cut = vec![1f32; m * n];
                        p.run(&mut cut, bias, threads);
                        assert!(
                            one.iter()
                                .zip(&cut)
                                .all(|(x, y)| x.to_bits() == y.to_bits()),
                            "{m}×{k}×{n} {spec:?} on {threads} threads"
                        );
                    }
                }
            }
        }
    }
}
