//! PyTorch's foreach SGD (`foreach.wgsl`): the update of several parameters in one
//! dispatch instead of one each, as `torch._foreach_add_` launches one kernel for a list
//! of tensors. Each parameter is updated exactly as [`Kernels::sgd`] updates it.
//!
//! Up to [`PAIRS`] (param, grad) pairs a dispatch, where the device binds eight storage
//! buffers per stage; float32 pairs that are each one span of whole quads. Anything else
//! runs [`Kernels::sgd`] per pair.

use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::Bind;
use crate::record::{Dispatch, grid, record};
use crate::view::Matrix;

const FOREACH: &str = include_str!("foreach.wgsl");

/// Pairs per dispatch (two storage bindings each).
pub const PAIRS: usize = 4;

/// The uniform of `sgd_foreach` (`Params` in foreach.wgsl).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ForeachParams {
    n: [u32; 4],
    off_p: [u32; 4],
    off_g: [u32; 4],
    lr: [f32; 4],
}

/// One pair's bindings and length.
type Pair<'a> = (Bind<'a>, Bind<'a>, u64);

impl Kernels {
    /// `param -= lr · grad` for every `(param, grad)` pair, [`PAIRS`] pairs a dispatch where
    /// they allow it (see the module docs).
    pub fn sgd_foreach(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pairs: &[(Matrix<'_>, Matrix<'_>)],
        lr: f32,
    ) -> Result<(), KernelError> {
        let mut batched: Vec<Pair<'_>> = Vec::new();
        for (param, grad) in pairs {
            match self.foreach_pair(param, grad)? {
                Some(pair) => batched.push(pair),
                None => self.sgd(encoder, param, grad, lr)?,
            }
        }
        let dispatches = batched
            .chunks(PAIRS)
            .map(|chunk| self.foreach_dispatch(chunk, lr))
            .collect::<Result<Vec<_>, _>>()?;
        record(self, encoder, &dispatches);
        Ok(())
    }

    /// The pair's bindings, if it can join a foreach dispatch.
    fn foreach_pair<'a>(
        &self,
        param: &Matrix<'a>,
        grad: &Matrix<'a>,
    ) -> Result<Option<Pair<'a>>, KernelError> {
        if self.layouts.storage8.is_none() || param.len() != grad.len() || param.is_empty() {
            return Ok(None);
        }
        let (Some(p), Some(g)) = (
            self.whole_quads("param", &param.flat())?,
            self.whole_quads("grad", &grad.flat())?,
        ) else {
            return Ok(None);
        };
        Ok(Some((p, g, param.len())))
    }

    fn foreach_dispatch<'a>(
        &'a self,
        chunk: &[Pair<'a>],
        lr: f32,
    ) -> Result<Dispatch<'a>, KernelError> {
        let layout = self.layouts.storage8.as_ref().ok_or_else(|| {
            KernelError::Unsupported("eight storage buffers per shader stage".into())
        })?;
        let mut params = ForeachParams {
            lr: [lr, 0.0, 0.0, 0.0],
            ..ForeachParams::default()
        };
        let mut storage = Vec::with_capacity(2 * PAIRS);
        let mut writes = 0;
        for t in 0..PAIRS {
            match chunk.get(t) {
                Some((p, g, n)) => {
                    params.n[t] = *n as u32;
                    params.off_p[t] = p.elem() as u32;
                    params.off_g[t] = g.elem() as u32;
                    storage.push(p.clone());
                    storage.push(g.clone());
                    writes |= 1 << (2 * t);
                }
                None => {
                    storage.push(self.dummy_bind());
                    storage.push(self.dummy_bind());
                }
            }
        }
        let quads: u64 = chunk.iter().map(|(_, _, n)| n / 4).max().unwrap_or(0);
        self.f32_quads_dispatch(
            "foreach/f32",
            FOREACH,
            &["p0", "g0", "p1", "g1", "p2", "g2", "p3", "g3"],
            "sgd_foreach",
            layout,
            storage,
            writes,
            bytemuck::bytes_of(&params),
            grid(quads.div_ceil(64).max(1), self.limits.max_workgroups),
        )
    }
}
