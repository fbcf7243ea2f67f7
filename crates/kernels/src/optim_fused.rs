//! Foreach Adam's update with its denominator (`optim_fused.wgsl`): [`Kernels::adam`] and
//! then [`Kernels::adam_denom`] from the updated `v`, as one pass over the five tensors
//! (all of them written as the two kernels write them). Where any tensor is not float32
//! whole quads in one binding, or the device binds fewer than five storage buffers, the
//! two kernels run.

use crate::elementwise::split2;
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::optim::Adam;
use crate::record::{Dispatch, grid};
use crate::view::Matrix;

const OPTIM_FUSED: &str = include_str!("optim_fused.wgsl");

/// The uniform of `adam_with_denom` (`Params` in optim_fused.wgsl).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    offsets: [u32; 5],
    pad: [u32; 2],
    f: [f32; 4],
    g: [f32; 4],
    h: [f32; 4],
}

/// The five tensors of one parameter's step.
#[derive(Clone, Copy, Debug)]
pub struct AdamTensors<'a> {
    pub param: Matrix<'a>,
    pub grad: Matrix<'a>,
    pub m: Matrix<'a>,
    pub v: Matrix<'a>,
    /// Foreach Adam's denominator, `sqrt(v) · scale + eps`.
    pub denom: Matrix<'a>,
}

impl Kernels {
    /// [`Kernels::adam`] on `t`, then `t.denom = sqrt(t.v) · scale + eps`
    /// ([`Kernels::adam_denom`]): one dispatch where the tensors allow it.
    pub fn adam_with_denom(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        t: &AdamTensors<'_>,
        h: &Adam,
        scale: f64,
        eps: f64,
    ) -> Result<(), KernelError> {
        let fused = self.adam_denom_dispatch(t, h, scale, eps)?;
        self.fused_or(encoder, fused, |e| {
            self.adam(e, &t.param, &t.grad, &t.m, &t.v, h)?;
            self.adam_denom(e, &t.v, &t.denom, scale, eps)
        })
    }

    fn adam_denom_dispatch<'a>(
        &'a self,
        t: &AdamTensors<'a>,
        h: &Adam,
        scale: f64,
        eps: f64,
    ) -> Result<Option<Dispatch<'a>>, KernelError> {
        let n = t.param.len();
        let Some(layout) = self.layouts.storage5.as_ref() else {
            return Ok(None);
        };
        if h.step == 0 || n == 0 || [&t.grad, &t.m, &t.v, &t.denom].iter().any(|x| x.len() != n) {
            return Ok(None);
        }
        let mut binds = Vec::with_capacity(5);
        for (name, x) in [
            ("param", &t.param),
            ("grad", &t.grad),
            ("m", &t.m),
            ("v", &t.v),
            ("denom", &t.denom),
        ] {
            match self.whole_quads(name, &x.flat())? {
                Some(b) => binds.push(b),
                None => return Ok(None),
            }
        }
        // As `Kernels::adam` and `Kernels::adam_denom` pass them.
        let step = i32::try_from(h.step).unwrap_or(i32::MAX);
        let bc1 = 1.0 - f64::from(h.beta1).powi(step);
        let bc2 = 1.0 - f64::from(h.beta2).powi(step);
        let ((c1, c1_lo), (c2, c2_lo)) = (split2(bc1), split2(bc2.sqrt()));
        let ((s, s_lo), (e, e_lo)) = (split2(scale), split2(eps));
        let mut offsets = [0u32; 5];
        for (o, b) in offsets.iter_mut().zip(&binds) {
            *o = b.elem() as u32;
        }
        let params = Params {
            n: n as u32,
            offsets,
            f: [h.lr, h.beta1, h.beta2, h.eps],
            g: [c1, c2, c1_lo, c2_lo],
            h: [s, e, s_lo, e_lo],
            ..Params::default()
        };
        self.f32_quads_dispatch(
            "optim-fused/f32",
            OPTIM_FUSED,
            &["param", "grad", "m", "v", "d"],
            "adam_with_denom",
            layout,
            binds,
            // param, m, v and d.
            0b11101,
            bytemuck::bytes_of(&params),
            grid((n / 4).div_ceil(64).max(1), self.limits.max_workgroups),
        )
        .map(Some)
    }
}
