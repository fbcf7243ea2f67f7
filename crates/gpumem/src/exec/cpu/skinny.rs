//! Products with one side of at most [`SMALL`] (the lesson's 2 inputs and 2 classes), by
//! streaming the large operand once. A general gemm packs that operand into a copy first and
//! pads the small side to its register tile: at batch 4096 that doubled the memory traffic
//! of the step's products and left most multiplies on padding.
//!
//! Every value of C is summed in one fixed order (over k ascending, in eight lanes for dot
//! products), whichever thread computes it; the cut into pieces follows C's free dimension.

use super::super::compute::Compute;
use super::matmul::{Product, SendPtr};
use super::par;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The largest small side handled here.
pub(super) const SMALL: usize = 4;
/// Lanes of a dot product's partial sums.
const LANES: usize = 8;

/// Runs `f` over `0..len` cut into ranges, taken in turn by every core's thread when
/// `parallel` (more ranges than threads, so a core slowed by other work takes fewer).
fn ranges(len: usize, parallel: bool, f: impl Fn(std::ops::Range<usize>) + Sync) {
    let threads = par::threads().min(len);
    if !parallel || threads < 2 {
        f(0..len);
        return;
    }
    let pieces = (threads * 4).min(len);
    let per = len.div_ceil(pieces);
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i * per >= len {
                break;
            }
            f(i * per..((i + 1) * per).min(len));
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
}

/// `Σ x[p]·y[p]` in [`LANES`] partial sums added in a fixed order.
fn dot<C: Compute>(x: &[C], y: &[C]) -> C {
    let mut acc = [C::zero(); LANES];
    let (xc, yc) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (xs, ys) in xc.zip(yc) {
        for l in 0..LANES {
            acc[l] += xs[l] * ys[l];
        }
    }
    for (l, (&x, &y)) in xr.iter().zip(yr).enumerate() {
        acc[l] += x * y;
    }
    acc.iter().fold(C::zero(), |s, &v| s + v)
}

/// Whether matrixmultiply's kernels fuse multiply and add here (they pick an FMA kernel
/// when the CPU has one): the k ≤ [`SMALL`] rows then round the same way, value for value.
fn fused_multiply_add() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One row of C for k ≤ [`SMALL`]: `a[0]·b₀ + a[1]·b₁ + … (+ bias)`, pass by pass over the
/// row (in L1), the products after the first fused into the sum when `fma` (as the gemm
/// kernel does), then the bias added.
fn k_row<C: Compute>(row: &mut [C], a: &[C], bt: &[C], bias: Option<&[C]>, fma: bool) {
    #[cfg(target_arch = "x86_64")]
    if fma {
        // SAFETY: `fma` is true only where the CPU has FMA (`fused_multiply_add`).
        return unsafe { k_row_fma(row, a, bt, bias) };
    }
    k_row_with::<C, false>(row, a, bt, bias);
}

/// [`k_row_with`] compiled for FMA, so that `mul_add` is one instruction.
///
/// # Safety
/// The CPU must have FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn k_row_fma<C: Compute>(row: &mut [C], a: &[C], bt: &[C], bias: Option<&[C]>) {
    k_row_with::<C, true>(row, a, bt, bias);
}

#[inline(always)]
fn k_row_with<C: Compute, const FMA: bool>(row: &mut [C], a: &[C], bt: &[C], bias: Option<&[C]>) {
    let n = row.len();
    for (c, &b) in row.iter_mut().zip(&bt[..n]) {
        *c = a[0] * b;
    }
    for (p, &ap) in a.iter().enumerate().skip(1) {
        for (c, &b) in row.iter_mut().zip(&bt[p * n..(p + 1) * n]) {
            *c = if FMA { ap.mul_add(b, *c) } else { *c + ap * b };
        }
    }
    if let Some(bias) = bias {
        for (c, &b) in row.iter_mut().zip(bias) {
            *c += b;
        }
    }
}

impl<C: Compute> Product<C> {
    fn a_at(&self, i: usize, p: usize) -> C {
        // SAFETY: i < m and p < k: inside A, as `Product` promises.
        unsafe { *self.a.at(i, p).ptr }
    }

    fn b_at(&self, p: usize, j: usize) -> C {
        // SAFETY: p < k and j < n: inside B.
        unsafe { *self.b.at(p, j).ptr }
    }

    /// A's row `i` (k values) when A's rows are contiguous, or its column `p` (m values)
    /// when they are A's stored rows (`op(A)` a transpose).
    fn a_slice(&self, start: (usize, usize), len: usize) -> &[C] {
        // SAFETY: the caller asks for a contiguous run inside A.
        unsafe { std::slice::from_raw_parts(self.a.at(start.0, start.1).ptr, len) }
    }

    /// Writes C into `c` (row-major, m×n) plus `bias` if this shape is skinny and laid out
    /// for it; returns false (and writes nothing) otherwise.
    pub(super) fn skinny(self, c: &mut [C], bias: Option<&[C]>, parallel: bool) -> bool {
        let (m, k, n) = (self.m, self.k, self.n);
        let out = SendPtr(c.as_mut_ptr());
        let bias_at = |j: usize| bias.map_or(C::zero(), |b| b[j]);
        // Writes row `i` of C from `value(j)`.
        let put = |i: usize, value: &dyn Fn(usize) -> C| {
            for j in 0..n {
                // SAFETY: row i of C; each row is written by the one range that holds i.
                unsafe { *out.at(i * n + j) = value(j) + bias_at(j) };
            }
        };
        if k <= SMALL {
            // Rows of C as sums of k scaled rows of B (B copied to rows once: k·n values).
            let fma = fused_multiply_add();
            let bt: Vec<C> = (0..k)
                .flat_map(|p| (0..n).map(move |j| (p, j)))
                .map(|(p, j)| self.b_at(p, j))
                .collect();
            ranges(m, parallel, |rows| {
                for i in rows {
                    // SAFETY: row i of C, this range's own.
                    let row = unsafe { std::slice::from_raw_parts_mut(out.at(i * n), n) };
                    let a: [C; SMALL] =
                        std::array::from_fn(|p| if p < k { self.a_at(i, p) } else { C::zero() });
                    k_row(row, &a[..k], &bt, bias, fma);
                }
            });
            return true;
        }
        if n <= SMALL && self.a.cs == 1 {
            // Dot products of A's rows with B's columns (copied to rows once: n·k values).
            let bt: Vec<C> = (0..n)
                .flat_map(|j| (0..k).map(move |p| (p, j)))
                .map(|(p, j)| self.b_at(p, j))
                .collect();
            ranges(m, parallel, |rows| {
                for i in rows {
                    let a = self.a_slice((i, 0), k);
                    put(i, &|j| dot(a, &bt[j * k..(j + 1) * k]));
                }
            });
            return true;
        }
        if n <= SMALL && self.a.rs == 1 {
            // op(A) = Aᵀ: C's columns accumulate A's stored rows, scaled, p ascending.
            ranges(m, parallel, |rows| {
                let len = rows.len();
                let mut acc = vec![C::zero(); n * len];
                for p in 0..k {
                    let a = self.a_slice((rows.start, p), len);
                    for j in 0..n {
                        let bj = self.b_at(p, j);
                        let col = &mut acc[j * len..(j + 1) * len];
                        col.iter_mut().zip(a).for_each(|(c, &a)| *c += a * bj);
                    }
                }
                for (r, i) in rows.enumerate() {
                    put(i, &|j| acc[j * len + r]);
                }
            });
            return true;
        }
        if m <= SMALL && self.b.cs == 1 {
            // C's rows accumulate B's rows, scaled, p ascending; cut along C's columns.
            ranges(n, parallel, |cols| {
                let len = cols.len();
                let mut acc = vec![C::zero(); m * len];
                for p in 0..k {
                    // SAFETY: row p of B, columns `cols`: contiguous (cs = 1), inside B.
                    let b =
                        unsafe { std::slice::from_raw_parts(self.b.at(p, cols.start).ptr, len) };
                    for (i, row) in acc.chunks_exact_mut(len).enumerate() {
                        let aip = self.a_at(i, p);
                        row.iter_mut().zip(b).for_each(|(c, &b)| *c += aip * b);
                    }
                }
                for (i, row) in acc.chunks_exact(len).enumerate() {
                    for (r, j) in cols.clone().enumerate() {
                        // SAFETY: row i, column j of C, in this range's own columns.
                        unsafe { *out.at(i * n + j) = row[r] + bias_at(j) };
                    }
                }
            });
            return true;
        }
        false
    }
}
