//! Softmax cross-entropy with its gradient, fused (one pass over the logits).

use crate::elementwise::FlatParams;
use crate::pieces::{Operand, segments};
use crate::record::{Dispatch, grid, record};
use crate::view::{DType, Matrix};
use crate::{KernelError, Kernels, Layouts, expect_dtype, pipelines};

pub(crate) struct Pipelines {
    softmax_xent: wgpu::ComputePipeline,
}

impl Pipelines {
    pub fn new(device: &wgpu::Device, layouts: &Layouts) -> Result<Self, KernelError> {
        let mut p = pipelines(
            device,
            "softmax_xent",
            include_str!("softmax_xent.wgsl"),
            &layouts.storage4.1,
            &["softmax_xent"],
            &[],
        )?;
        Ok(Pipelines {
            softmax_xent: p.remove(0),
        })
    }
}

impl Kernels {
    /// For each of the B rows of `logits` [B×C] with class `labels[r]` (u32, B×1):
    /// `stats[r] = [loss, 1.0 if argmax == label else 0.0]` (B×2) and
    /// `dlogits[r] = (softmax(logits[r]) - onehot(label)) * scale` (B×C; the engine passes
    /// `scale = 1 / batch`). Numerically stable (the row max is subtracted). A label ≥ C
    /// gives a NaN loss.
    pub fn softmax_xent(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        logits: &Matrix<'_>,
        labels: &Matrix<'_>,
        stats: &Matrix<'_>,
        dlogits: &Matrix<'_>,
        scale: f32,
    ) -> Result<(), KernelError> {
        expect_dtype("logits", logits, DType::F32)?;
        expect_dtype("labels", labels, DType::U32)?;
        expect_dtype("stats", stats, DType::F32)?;
        expect_dtype("dlogits", dlogits, DType::F32)?;
        let (b, c) = (logits.rows, logits.cols);
        if labels.len() != b
            || (stats.rows, stats.cols) != (b, 2)
            || (dlogits.rows, dlogits.cols) != (b, c)
        {
            return Err(KernelError::Shape(format!(
                "softmax_xent: logits {b}x{c} needs labels of {b}, stats {b}x2 and dlogits {b}x{c}; \
                 got {} labels, stats {}x{}, dlogits {}x{}",
                labels.len(),
                stats.rows,
                stats.cols,
                dlogits.rows,
                dlogits.cols
            )));
        }
        if c == 0 {
            return Err(KernelError::Shape("softmax_xent: no classes".into()));
        }
        let lim = &self.limits;
        let labels = Matrix {
            rows: b,
            cols: 1,
            ..*labels
        };
        let ops = [
            Operand::new("logits", logits, lim, 1)?,
            Operand::new("labels", &labels, lim, 1)?,
            Operand::new("stats", stats, lim, 1)?,
            Operand::new("dlogits", dlogits, lim, 1)?,
        ];
        let refs: Vec<&Operand<'_>> = ops.iter().collect();
        let mut dispatches = Vec::new();
        for (s, e) in segments(b, &refs) {
            let storage: Vec<_> = ops.iter().map(|o| o.bind(s, e)).collect();
            let mut off = [0u32; 4];
            for (o, x) in off.iter_mut().zip(&storage) {
                *o = x.elem() as u32;
            }
            let params = FlatParams {
                n: [(e - s) as u32, c as u32, 0, 0],
                off,
                f: [scale, 0.0, 0.0, 0.0],
                g: [0.0; 4],
            };
            dispatches.push(Dispatch {
                pipeline: &self.loss.softmax_xent,
                layout: &self.layouts.storage4.0,
                storage,
                writes: 0b1100,
                params: bytemuck::bytes_of(&params).to_vec(),
                groups: grid((e - s).div_ceil(64), lim.max_workgroups),
            });
        }
        record(self, encoder, &dispatches);
        Ok(())
    }
}
