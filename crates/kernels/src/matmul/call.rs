//! One matmul call checked and cut: shapes, storage, operands in bindable spans, the cuts
//! of M, K and N every operand allows, and the scratch buffers the pieces need.

use super::params::{Skinny, Stores};
use super::tiled::ENTRY_POINTS;
use super::{Gemm, MatmulKernel};
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::{Operand, segments};
use crate::shader::Store;
use crate::view::{DType, Matrix};

/// A checked call (see the module docs of `matmul.rs` for how it is cut).
pub(super) struct Call<'a> {
    pub g: Gemm<'a>,
    pub kernel: MatmulKernel,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub stores: Stores,
    pub a: Operand<'a>,
    pub b: Operand<'a>,
    pub c: Operand<'a>,
    /// The bias as a `1 × n` operand.
    pub bias: Option<Operand<'a>>,
    pub msegs: Vec<(u64, u64)>,
    pub ksegs: Vec<(u64, u64)>,
    pub nsegs: Vec<(u64, u64)>,
}

/// Bytes of the scratch buffers of a call (0: not needed).
pub(super) struct ScratchBytes {
    /// Split-k partial sums of every piece, one after another.
    pub partial: u64,
    /// A float16 C's sums over several reduction pieces, in the compute type.
    pub kacc: u64,
}

impl<'a> Call<'a> {
    /// Checks `g` (shapes, then storage, then parts) and cuts its operands.
    pub fn new(k: &Kernels, g: &Gemm<'a>, kernel: MatmulKernel) -> Result<Self, KernelError> {
        let (m, kk, n) = shape(g)?;
        let bias = g.bias.map(|b| bias_row(&b, n)).transpose()?;
        let stores = Stores::new(
            float_store(k, "a", &g.a)?,
            float_store(k, "b", &g.b)?,
            float_store(k, "c", &g.c)?,
            bias.map(|b| float_store(k, "bias", &b)).transpose()?,
        );
        let lim = &k.limits;
        let a = Operand::new("a", &g.a, lim, 4)?;
        let b = Operand::new("b", &g.b, lim, 4)?;
        let c = Operand::new("c", &g.c, lim, 4)?;
        let bias = bias.map(|m| Operand::new("bias", &m, lim, 1)).transpose()?;
        let (a_on_m, a_on_k) = if g.trans_a {
            (None, Some(&a))
        } else {
            (Some(&a), None)
        };
        let (b_on_k, b_on_n) = if g.trans_b {
            (None, Some(&b))
        } else {
            (Some(&b), None)
        };
        let msegs = segments(
            m,
            &[Some(&c), a_on_m].into_iter().flatten().collect::<Vec<_>>(),
        );
        let ksegs = segments(
            kk,
            &[a_on_k, b_on_k].into_iter().flatten().collect::<Vec<_>>(),
        );
        let nsegs = segments(n, &b_on_n.into_iter().collect::<Vec<_>>());
        Ok(Call {
            g: *g,
            kernel,
            m,
            n,
            k: kk,
            stores,
            a,
            b,
            c,
            bias,
            msegs,
            ksegs,
            nsegs,
        })
    }

    /// The tiled kernel's entry point for this call's transposes (none for `aᵀ·bᵀ`).
    pub fn form(&self) -> Option<&'static str> {
        let [nn, tn, nt] = ENTRY_POINTS;
        match (self.g.trans_a, self.g.trans_b) {
            (false, false) => Some(nn),
            (true, false) => Some(tn),
            (false, true) => Some(nt),
            (true, true) => None,
        }
    }

    /// Whether an `mp × np` block of a float16 C reduced in several pieces accumulates in
    /// the compute type, in scratch, and is rounded once at the end (when it fits a binding).
    pub fn kacc_fits(&self, k: &Kernels, mp: u64, np: u64) -> bool {
        matches!(self.stores.c, Store::F16 | Store::F16Packed)
            && self.ksegs.len() > 1
            && mp * np * self.stores.compute.size() <= k.limits.max_binding
    }

    /// The largest scratch each use needs over every block and reduction piece.
    pub fn scratch_bytes(&self, k: &Kernels) -> ScratchBytes {
        let tsize = self.stores.compute.size();
        let mut out = ScratchBytes {
            partial: 0,
            kacc: 0,
        };
        for &(m0, m1) in &self.msegs {
            for &(n0, n1) in &self.nsegs {
                let (mp, np) = (m1 - m0, n1 - n0);
                if self.kacc_fits(k, mp, np) {
                    out.kacc = out.kacc.max((mp * np * tsize).next_multiple_of(32));
                }
                for &(k0, k1) in &self.ksegs {
                    if let Some(Skinny::N(s) | Skinny::M(s)) =
                        k.skinny(self.kernel, mp, np, k1 - k0, tsize)
                        && s > 1
                    {
                        out.partial = out.partial.max((s * mp * np * tsize).next_multiple_of(32));
                    }
                }
            }
        }
        out
    }
}

/// `(m, k, n)` of `g`, or why op(a), op(b) and c do not fit together.
fn shape(g: &Gemm<'_>) -> Result<(u64, u64, u64), KernelError> {
    let (m, k) = if g.trans_a {
        (g.a.cols, g.a.rows)
    } else {
        (g.a.rows, g.a.cols)
    };
    let (kb, n) = if g.trans_b {
        (g.b.cols, g.b.rows)
    } else {
        (g.b.rows, g.b.cols)
    };
    if k != kb || g.c.rows != m || g.c.cols != n {
        return Err(KernelError::Shape(format!(
            "matmul: op(a) is {m}x{k}, op(b) is {kb}x{n}, c is {}x{}",
            g.c.rows, g.c.cols
        )));
    }
    Ok((m, k, n))
}

/// The bias seen as a `1 × n` row, if it has `n` values.
fn bias_row<'a>(bias: &Matrix<'a>, n: u64) -> Result<Matrix<'a>, KernelError> {
    if bias.len() != n {
        return Err(KernelError::Shape(format!(
            "matmul: bias has {} values, c has {n} columns",
            bias.len()
        )));
    }
    Ok(Matrix {
        rows: 1,
        cols: n,
        ..*bias
    })
}

/// The storage of a float operand of matmul.
fn float_store(k: &Kernels, name: &str, m: &Matrix<'_>) -> Result<Store, KernelError> {
    if !m.dtype.is_float() {
        return Err(KernelError::DType {
            name: name.to_string(),
            expected: DType::F32,
            got: m.dtype,
        });
    }
    k.store(m.dtype)
}
