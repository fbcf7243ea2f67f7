//! The cross-entropy's kernels fused with their neighbours for the batches the lesson
//! trains, every output written as the separate kernels write it (the engine allocates the
//! outputs in the separate operations' order before the one operation):
//!
//! * `log_softmax` and `nll_loss` (`fused.wgsl`): where every float operand is float32, the
//!   batch is one piece of at most [`WG`] rows (one workgroup, a row per invocation, as
//!   `nll_loss_one` strides them) and the device binds five storage buffers per stage;
//! * `fill` (the backward pass's gradient of ones) and `nll_loss_backward`
//!   (`fill_nll_loss_backward` in xent.wgsl): where the float operands are float32 and the
//!   batch is one piece.
//!
//! Anything else runs the separate kernels.

use super::{dispatch, label_view, module, pipeline};
use crate::elementwise::FlatParams;
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::{Operand, segments};
use crate::record::{Dispatch, grid};
use crate::shader::Store;
use crate::view::{DType, Matrix};

const FUSED: &str = include_str!("fused.wgsl");

/// Rows of one workgroup (`WG` in xent.wgsl): the most rows the fused kernel takes.
const WG: u64 = 256;

impl Kernels {
    /// [`Kernels::log_softmax`]`(x, logp)` then [`Kernels::nll_loss`]`(logp, labels, loss,
    /// total_weight)`, one dispatch where the module docs say.
    pub fn log_softmax_nll_loss(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &Matrix<'_>,
        logp: &Matrix<'_>,
        labels: &Matrix<'_>,
        loss: &Matrix<'_>,
        total_weight: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let fused = self.fused_xent(x, logp, labels, loss, total_weight)?;
        self.fused_or(encoder, fused, |e| {
            self.log_softmax(e, x, logp)?;
            self.nll_loss(e, logp, labels, loss, total_weight)
        })
    }

    fn fused_xent<'a>(
        &'a self,
        x: &Matrix<'a>,
        logp: &Matrix<'a>,
        labels: &Matrix<'a>,
        loss: &Matrix<'a>,
        total_weight: &Matrix<'a>,
    ) -> Result<Option<Dispatch<'a>>, KernelError> {
        let (b, c) = (x.rows, x.cols);
        let Some(layout) = self.layouts.storage5.as_ref() else {
            return Ok(None);
        };
        if !(1..=WG).contains(&b)
            || c == 0
            || (logp.rows, logp.cols) != (b, c)
            || labels.len() != b
            || loss.len() != 1
            || total_weight.len() != 1
            || [x, logp, loss, total_weight]
                .iter()
                .any(|m| m.dtype != DType::F32)
        {
            return Ok(None);
        }
        let (stride, labels) = label_view("nll_loss", labels, b)?;
        let lim = &self.limits;
        let ops = [
            Operand::new("x", x, lim, 1)?,
            Operand::new("logp", logp, lim, 1)?,
            Operand::new("labels", &labels, lim, 1)?,
        ];
        if segments(b, &ops.iter().collect::<Vec<_>>()) != [(0, b)] {
            return Ok(None);
        }
        let [xo, lo, lab] = ops;
        let storage = vec![
            xo.bind(0, b),
            Operand::new("loss", &loss.flat(), lim, 1)?.bind(0, 1),
            Operand::new("total_weight", &total_weight.flat(), lim, 1)?.bind(0, 1),
            lab.bind(0, b),
            lo.bind(0, b),
        ];
        let params = FlatParams {
            n: [b as u32, c as u32, stride, storage[4].elem() as u32],
            off: [0, 1, 2, 3].map(|i| storage[i].elem() as u32),
            f: [0.0; 4],
            g: [0.0; 4],
        };
        let pipeline = self.cache.get(
            &self.device,
            &layout.1,
            "xent-fused/f32",
            "log_softmax_nll_loss",
            &[],
            || {
                let mut s = module([Store::F32; 3], &[("d", Store::F32)], 5);
                s.push_str(FUSED);
                s
            },
        )?;
        Ok(Some(Dispatch {
            pipeline,
            layout: &layout.0,
            storage,
            writes: 0b10110,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: [1, 1, 1],
        }))
    }
    /// [`Kernels::fill`]`(grad_loss, value)` then [`Kernels::nll_loss_backward`]`(grad_loss,
    /// labels, total_weight, out)`: the gradient the backward pass starts from and the loss's
    /// gradient, one dispatch where the module docs say.
    pub fn fill_nll_loss_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grad_loss: &Matrix<'_>,
        value: f32,
        labels: &Matrix<'_>,
        total_weight: &Matrix<'_>,
        out: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let fused = self.fused_fill_nll(grad_loss, value, labels, total_weight, out)?;
        self.fused_or(encoder, fused, |e| {
            self.fill(e, grad_loss, f64::from(value))?;
            self.nll_loss_backward(e, grad_loss, labels, total_weight, out)
        })
    }

    fn fused_fill_nll<'a>(
        &'a self,
        grad_loss: &Matrix<'a>,
        value: f32,
        labels: &Matrix<'a>,
        total_weight: &Matrix<'a>,
        out: &Matrix<'a>,
    ) -> Result<Option<Dispatch<'a>>, KernelError> {
        let (b, c) = (out.rows, out.cols);
        if b == 0
            || c == 0
            || labels.len() != b
            || grad_loss.len() != 1
            || total_weight.len() != 1
            || [grad_loss, total_weight, out]
                .iter()
                .any(|m| m.dtype != DType::F32)
        {
            return Ok(None);
        }
        let (stride, labels) = label_view("nll_loss_backward", labels, b)?;
        let lim = &self.limits;
        let (oo, lab) = (
            Operand::new("out", out, lim, 1)?,
            Operand::new("labels", &labels, lim, 1)?,
        );
        if segments(b, &[&oo, &lab]) != [(0, b)] {
            return Ok(None);
        }
        let storage = vec![
            oo.bind(0, b),
            Operand::new("grad_loss", &grad_loss.flat(), lim, 1)?.bind(0, 1),
            Operand::new("total_weight", &total_weight.flat(), lim, 1)?.bind(0, 1),
            lab.bind(0, b),
        ];
        let entry = pipeline(self, [Store::F32; 3], "fill_nll_loss_backward")?;
        let n = [b as u32, c as u32, stride, 0];
        let groups = grid(b.div_ceil(64), lim.max_workgroups);
        let f = [value, 0.0, 0.0, 0.0];
        Ok(Some(dispatch(self, &entry, storage, 0b0011, n, f, groups)))
    }
}
