//! Products fused with the operation that reads their output next (`fused.wgsl`): the
//! forward's `z = x·W + b` with the ReLU `a = max(z, 0)`, and the backward's `dW = xᵀ·dZ`
//! with the bias's gradient `db = Σ_rows dZ`. Both outputs are written, as the separate
//! operations write them (the step's tensors and their lifetimes do not change); what is
//! saved is one dispatch and the second operation's pass over a 64,000-value tensor.
//!
//! The fused kernels cover the skinny shapes of the lesson's first layer (k ≤ 4 forward,
//! m ≤ 4 backward) and the output layer's weight gradient (n ≤ 4, m a multiple of 4) for
//! float32 operands that are whole quads in one binding each; anything else, a backward
//! product that split-k would cut (a GPU cuts the output layer's), and a device that binds
//! fewer than five storage buffers per stage (WebGPU's downlevel limits) runs the two
//! separate kernels.

use super::call::Call;
use super::params::Skinny;
use super::skinny::SKINNY_MAX;
use super::{Gemm, MatmulKernel};
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::Bind;
use crate::record::{Dispatch, grid};
use crate::shader::Store;
use crate::view::{DType, Matrix};

const FUSED: &str = include_str!("fused.wgsl");

/// Rows per workgroup of `mm_smallk_relu` (`SMALLK_ROWS` in fused.wgsl).
const SMALLK_ROWS: u64 = 64;
/// Most rows [`Kernels::colsum`] sums in one pass (a choice: a batch's worth; longer
/// columns take its two passes, which spread them over workgroups).
const COLSUM_ROWS: u64 = 256;
/// `FusedParams::flags`: add the bias.
const BIAS: u32 = 2;

/// The uniform of the fused kernels (`Params` in fused.wgsl); offsets in elements.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct FusedParams {
    m: u32,
    n: u32,
    k: u32,
    flags: u32,
    a_off: u32,
    b_off: u32,
    c_off: u32,
    x_off: u32,
    r_off: u32,
    pad: [u32; 3],
}

impl Kernels {
    /// `g.c = op(g.a)·op(g.b) (+ g.bias)`, then `out = max(g.c, 0)`: one kernel where the
    /// product is a forward layer with k ≤ 4 (see the module docs), else [`Kernels::matmul`]
    /// and [`Kernels::relu`].
    pub fn matmul_relu(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        g: &Gemm<'_>,
        out: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let fused = self.fused_relu(g, out)?;
        self.fused_or(encoder, fused, |e| {
            self.matmul(e, g)?;
            self.relu(e, &g.c, out)
        })
    }

    /// `g.c = op(g.a)·op(g.b)` and `sums` = the column sums of `g.b` (a weight's and its
    /// bias's gradients, `aᵀ·dZ` and `Σ dZ`): one kernel where m ≤ 4 or n ≤ 4 and the
    /// product would not be split along k, else [`Kernels::matmul`] and [`Kernels::colsum`].
    pub fn matmul_colsum(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        g: &Gemm<'_>,
        sums: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let fused = self.fused_colsum(g, sums)?;
        self.fused_or(encoder, fused, |e| {
            self.matmul(e, g)?;
            self.colsum(e, &g.b, sums, false)
        })
    }

    /// The column sums of `b` in one pass where it has at most [`COLSUM_ROWS`] rows (else
    /// `None`: [`Kernels::colsum`]'s two passes spread a long column over workgroups).
    pub(crate) fn colsum_rows<'a>(
        &'a self,
        b: &Matrix<'a>,
        sums: &Matrix<'a>,
    ) -> Result<Option<Dispatch<'a>>, KernelError> {
        if self.layouts.storage5.is_none()
            || b.rows > COLSUM_ROWS
            || sums.len() != b.cols
            || sums.dtype != DType::F32
        {
            return Ok(None);
        }
        let (Some(bb), Some(x)) = (
            self.whole_quads("b", b)?,
            self.whole_quads("sums", &sums.flat())?,
        ) else {
            return Ok(None);
        };
        let params = FusedParams {
            n: b.cols as u32,
            k: b.rows as u32,
            b_off: bb.elem() as u32,
            x_off: x.elem() as u32,
            ..FusedParams::default()
        };
        let groups = grid(b.cols.div_ceil(64), self.limits.max_workgroups);
        let storage = vec![
            self.dummy_bind(),
            bb,
            self.dummy_bind(),
            x,
            self.dummy_bind(),
        ];
        self.fused_dispatch("colsum_rows", storage, 1 << 3, params, groups)
            .map(Some)
    }

    fn fused_relu<'a>(
        &'a self,
        g: &Gemm<'a>,
        out: &Matrix<'a>,
    ) -> Result<Option<Dispatch<'a>>, KernelError> {
        if self.layouts.storage5.is_none() {
            return Ok(None);
        }
        let call = Call::new(self, g, MatmulKernel::Auto)?;
        let (m, n, k) = (call.m, call.n, call.k);
        if g.trans_a
            || g.trans_b
            || g.accumulate
            || !(1..=SKINNY_MAX).contains(&k)
            || !fusable(&call, n)
            || (out.rows, out.cols) != (m, n)
            || out.dtype != DType::F32
        {
            return Ok(None);
        }
        let Some(r) = self.whole_quads("out", out)? else {
            return Ok(None);
        };
        let bias = match &g.bias {
            Some(b) => match self.whole_quads("bias", &b.flat())? {
                Some(b) => Some(b),
                None => return Ok(None),
            },
            None => None,
        };
        let (Some(a), Some(b), Some(c)) = (
            self.whole_quads("a", &g.a)?,
            self.whole_quads("b", &g.b)?,
            self.whole_quads("c", &g.c)?,
        ) else {
            return Ok(None);
        };
        let params = FusedParams {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            flags: if bias.is_some() { BIAS } else { 0 },
            a_off: a.elem() as u32,
            b_off: b.elem() as u32,
            c_off: c.elem() as u32,
            x_off: bias.as_ref().map_or(0, |b| b.elem() as u32),
            r_off: r.elem() as u32,
            ..FusedParams::default()
        };
        let max = self.limits.max_workgroups;
        let groups = [
            n.div_ceil(4).div_ceil(64).clamp(1, u64::from(max)) as u32,
            m.div_ceil(SMALLK_ROWS).clamp(1, u64::from(max)) as u32,
            1,
        ];
        let x = bias.unwrap_or_else(|| self.dummy_bind());
        self.fused_dispatch(
            "mm_smallk_relu",
            vec![a, b, c, x, r],
            1 << 2 | 1 << 4,
            params,
            groups,
        )
        .map(Some)
    }

    fn fused_colsum<'a>(
        &'a self,
        g: &Gemm<'a>,
        sums: &Matrix<'a>,
    ) -> Result<Option<Dispatch<'a>>, KernelError> {
        if self.layouts.storage5.is_none()
            || !g.trans_a
            || g.trans_b
            || g.accumulate
            || g.bias.is_some()
            || sums.dtype != DType::F32
        {
            return Ok(None);
        }
        let call = Call::new(self, g, MatmulKernel::Auto)?;
        let (m, n, k) = (call.m, call.n, call.k);
        let stores = &call.stores;
        let f32s = [stores.a, stores.b, stores.c]
            .iter()
            .all(|&s| s == Store::F32);
        // Only where the unfused product runs unsplit (a GPU splits a long k): m ≤ 4
        // (the first layer's), or n ≤ 4 with whole quads of m (the output layer's).
        let (entry, quads) = match self.skinny(MatmulKernel::Auto, m, n, k, 4) {
            Some(Skinny::M(1)) if fusable(&call, n) => ("mm_smallm_colsum", n / 4),
            Some(Skinny::N(1)) if f32s && m.is_multiple_of(4) && n > 0 => {
                ("mm_smalln4_colsum", m / 4)
            }
            _ => return Ok(None),
        };
        if sums.len() != n {
            return Ok(None);
        }
        let (Some(a), Some(b), Some(c), Some(x)) = (
            self.whole_quads("a", &g.a)?,
            self.whole_quads("b", &g.b)?,
            self.whole_quads("c", &g.c)?,
            self.whole_quads("sums", &sums.flat())?,
        ) else {
            return Ok(None);
        };
        let params = FusedParams {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            a_off: a.elem() as u32,
            b_off: b.elem() as u32,
            c_off: c.elem() as u32,
            x_off: x.elem() as u32,
            ..FusedParams::default()
        };
        let groups = grid(quads.div_ceil(64), self.limits.max_workgroups);
        let r = self.dummy_bind();
        self.fused_dispatch(entry, vec![a, b, c, x, r], 1 << 2 | 1 << 3, params, groups)
            .map(Some)
    }

    fn fused_dispatch<'a>(
        &'a self,
        entry: &str,
        storage: Vec<Bind<'a>>,
        writes: u32,
        params: FusedParams,
        groups: [u32; 3],
    ) -> Result<Dispatch<'a>, KernelError> {
        let layout = self.layouts.storage5.as_ref().ok_or_else(|| {
            KernelError::Unsupported("five storage buffers per shader stage".into())
        })?;
        self.f32_quads_dispatch(
            "mm-fused/f32",
            FUSED,
            &["a", "b", "c", "x", "r"],
            entry,
            layout,
            storage,
            writes,
            bytemuck::bytes_of(&params),
            groups,
        )
    }
}

/// Whether `call` is float32 throughout with `n` a whole number of quads.
fn fusable(call: &Call<'_>, n: u64) -> bool {
    let s = &call.stores;
    n.is_multiple_of(4) && call.m > 0 && [s.a, s.b, s.c, s.bias].iter().all(|&x| x == Store::F32)
}
