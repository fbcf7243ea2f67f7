//! Optimizer steps: plain SGD and Adam (as PyTorch computes it).

use crate::elementwise::flat;
use crate::record::record;
use crate::view::Matrix;
use crate::{KernelError, Kernels, Layouts, pipelines};

pub(crate) struct Pipelines {
    sgd: wgpu::ComputePipeline,
    adam: wgpu::ComputePipeline,
}

impl Pipelines {
    pub fn new(device: &wgpu::Device, layouts: &Layouts) -> Result<Self, KernelError> {
        let mut p = pipelines(
            device,
            "optim",
            include_str!("optim.wgsl"),
            &layouts.storage4.1,
            &["sgd", "adam"],
            &[],
        )?
        .into_iter();
        let mut next = || {
            p.next()
                .ok_or_else(|| KernelError::Pipeline("optim".into()))
        };
        Ok(Pipelines {
            sgd: next()?,
            adam: next()?,
        })
    }
}

/// Adam hyper-parameters; `step` counts from 1 (the first update uses `step = 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adam {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub step: u32,
}

impl Default for Adam {
    /// PyTorch's defaults, first step.
    fn default() -> Self {
        Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            step: 1,
        }
    }
}

impl Kernels {
    /// `param -= lr * grad`.
    pub fn sgd(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        param: &Matrix<'_>,
        grad: &Matrix<'_>,
        lr: f32,
    ) -> Result<(), KernelError> {
        let ops = [("param", param, true), ("grad", grad, false)];
        let layout = &self.layouts.storage4.0;
        let d = flat(
            self,
            &self.optim.sgd,
            layout,
            4,
            &ops,
            [lr, 0.0, 0.0, 0.0],
            [0.0; 4],
        )?;
        record(self, encoder, &d);
        Ok(())
    }

    /// One Adam step, updating `param`, and the moment estimates `m` and `v` in place.
    pub fn adam(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        param: &Matrix<'_>,
        grad: &Matrix<'_>,
        m: &Matrix<'_>,
        v: &Matrix<'_>,
        h: &Adam,
    ) -> Result<(), KernelError> {
        if h.step == 0 {
            return Err(KernelError::Unsupported("adam step counts from 1".into()));
        }
        // Bias corrections in f64 on the host: beta^t underflows gracefully there.
        let t = i32::try_from(h.step).unwrap_or(i32::MAX);
        let bc1 = 1.0 - f64::from(h.beta1).powi(t);
        let bc2 = 1.0 - f64::from(h.beta2).powi(t);
        let ops = [
            ("param", param, true),
            ("grad", grad, false),
            ("m", m, true),
            ("v", v, true),
        ];
        let f = [h.lr, h.beta1, h.beta2, h.eps];
        let g = [bc1 as f32, bc2.sqrt() as f32, 0.0, 0.0];
        let layout = &self.layouts.storage4.0;
        let d = flat(self, &self.optim.adam, layout, 4, &ops, f, g)?;
        record(self, encoder, &d);
        Ok(())
    }
}
