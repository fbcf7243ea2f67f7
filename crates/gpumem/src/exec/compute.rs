//! The number types the `cpu` backing computes in (float32 and float64), with their
//! conversions to and from the stored types and their gemm.

use crate::tensor::DType;
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

compute!(f32, DType::F32, matrixmultiply::sgemm);
compute!(f64, DType::F64, matrixmultiply::dgemm);
