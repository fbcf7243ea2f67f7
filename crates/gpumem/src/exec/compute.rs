//! The number types the `cpu` backing computes in (float32 and float64), with their
//! conversions to and from the stored types and their gemm.

use crate::dtype::DType;
use half::f16;
use num_traits::Float;

/// The types the kernels compute in.
pub(super) trait Compute:
    Float
    + bytemuck::Pod
    + Default
    + Send
    + Sync
    + std::ops::AddAssign
    + std::ops::SubAssign
    + std::ops::MulAssign
{
    const DTYPE: DType;

    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
    fn from_f16(v: f16) -> Self;
    fn to_f16(self) -> f16;

    /// `C = alpha·A·B + beta·C` with arbitrary strides.
    ///
    /// # Safety
    /// The pointers and strides must describe `m×k`, `k×n` and `m×n` matrices inside live,
    /// non-overlapping (for C) allocations.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        beta: Self,
        c: *mut Self,
        rsc: isize,
    );
}

/// `Compute` for a float type: its `DType` and its gemm.
macro_rules! compute {
    ($t:ty, $dtype:expr, $gemm:path) => {
        impl Compute for $t {
            const DTYPE: DType = $dtype;
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            fn to_f32(self) -> f32 {
                self as f32
            }
            fn from_f16(v: f16) -> Self {
                // Exact: every float16 is a float32.
                v.to_f32() as $t
            }
            fn to_f16(self) -> f16 {
                // One rounding either way: widening to float64 is exact.
                f16::from_f64(self as f64)
            }
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: *const $t,
                rsa: isize,
                csa: isize,
                b: *const $t,
                rsb: isize,
                csb: isize,
                beta: $t,
                c: *mut $t,
                rsc: isize,
            ) {
                // SAFETY: forwarded from the caller.
                unsafe { $gemm(m, k, n, 1.0, a, rsa, csa, b, rsb, csb, beta, c, rsc, 1) }
            }
        }
    };
}

#[cfg(feature = "matrixmultiply")]
compute!(f32, DType::F32, matrixmultiply::sgemm);
#[cfg(feature = "matrixmultiply")]
compute!(f64, DType::F64, matrixmultiply::dgemm);
#[cfg(not(feature = "matrixmultiply"))]
compute!(f32, DType::F32, plain_gemm::<f32>);
#[cfg(not(feature = "matrixmultiply"))]
compute!(f64, DType::F64, plain_gemm::<f64>);

/// `C = alpha·A·B + beta·C` by the textbook loop, with matrixmultiply's arguments: the cpu
/// backing's product without that crate (the graders' tiny networks). Like matrixmultiply,
/// `beta = 0` never reads `C` (it may hold garbage).
///
/// # Safety
/// As [`Compute::gemm`]'s.
#[allow(clippy::too_many_arguments, dead_code)]
unsafe fn plain_gemm<T: Float + std::ops::AddAssign>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    csb: isize,
    beta: T,
    c: *mut T,
    rsc: isize,
    csc: isize,
) {
    for i in 0..m as isize {
        for j in 0..n as isize {
            let mut sum = T::zero();
            for p in 0..k as isize {
                // SAFETY: inside the m×k and k×n matrices the caller describes.
                sum += unsafe { *a.offset(i * rsa + p * csa) * *b.offset(p * rsb + j * csb) };
            }
            // SAFETY: inside the m×n matrix the caller describes.
            let out = unsafe { &mut *c.offset(i * rsc + j * csc) };
            *out = if beta == T::zero() {
                alpha * sum
            } else {
                alpha * sum + beta * *out
            };
        }
    }
}

#[cfg(all(test, feature = "matrixmultiply"))]
mod tests {
    use super::plain_gemm;

    /// The plain loop agrees with matrixmultiply on transposed strides, `beta` 0 (over
    /// garbage) and 1.
    #[test]
    fn the_plain_product_matches_matrixmultiply() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|v| (v as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|v| (v as f32 * 0.11).cos()).collect();
        for beta in [0.0f32, 1.0] {
            let start: Vec<f32> = (0..m * n)
                .map(|v| if beta == 0.0 { f32::NAN } else { v as f32 })
                .collect();
            let (mut plain, mut fast) = (start.clone(), start);
            // A read as k×m transposed (column strides), B row-major.
            // SAFETY: the strides describe the vectors above.
            unsafe {
                plain_gemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    1,
                    m as isize,
                    b.as_ptr(),
                    n as isize,
                    1,
                    beta,
                    plain.as_mut_ptr(),
                    n as isize,
                    1,
                );
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    1,
                    m as isize,
                    b.as_ptr(),
                    n as isize,
                    1,
                    beta,
                    fast.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            for (p, f) in plain.iter().zip(&fast) {
                assert!(
                    (p - f).abs() <= 1e-5 * f.abs().max(1.0),
                    "{p} vs {f} (beta {beta})"
                );
            }
        }
    }
}
