//! `log_softmax` and `nll_loss` in one dispatch (`fused.wgsl`) for the batches the lesson
//! trains: both outputs written as the two kernels write them (the engine allocates
//! `logp`, then the loss and `total_weight`, before the one operation), one dispatch saved.
//!
//! Fused where every float operand is float32, the batch is one piece of at most [`WG`]
//! rows (one workgroup, a row per invocation, as `nll_loss_one` strides them) and the device
//! binds five storage buffers per stage; anything else runs the two kernels.

use super::{label_view, module};
use crate::elementwise::FlatParams;
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::{Operand, segments};
use crate::record::Dispatch;
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
}
