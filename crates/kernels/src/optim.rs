//! Optimizer steps: plain SGD and Adam (as PyTorch computes it), in f32, or in f64 when
//! any operand is float64.

use crate::elementwise::{Access, Flat, FlatFamily, flat};
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::record::record;
use crate::view::Matrix;

/// SGD and Adam.
pub(crate) const OPTIM: FlatFamily = FlatFamily {
    name: "optim",
    source: include_str!("optim.wgsl"),
    bindings: &["param", "grad", "m", "v"],
};

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
        let ops = [("param", param, Access::Walk), ("grad", grad, Access::Read)];
        let kernel = Flat {
            family: &OPTIM,
            entry: "sgd",
        };
        let layouts = (&self.layouts.storage4.0, &self.layouts.storage4.1);
        let d = flat(
            self,
            &kernel,
            layouts,
            &ops,
            &[],
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
            ("param", param, Access::Walk),
            ("grad", grad, Access::Read),
            ("m", m, Access::Write),
            ("v", v, Access::Write),
        ];
        let f = [h.lr, h.beta1, h.beta2, h.eps];
        // Each correction as an f32 and the rest below its precision, for f64 kernels.
        let split = |x: f64| (x as f32, (x - f64::from(x as f32)) as f32);
        let ((c1, c1_lo), (c2, c2_lo)) = (split(bc1), split(bc2.sqrt()));
        let g = [c1, c2, c1_lo, c2_lo];
        let kernel = Flat {
            family: &OPTIM,
            entry: "adam",
        };
        let layouts = (&self.layouts.storage4.0, &self.layouts.storage4.1);
        let d = flat(self, &kernel, layouts, &ops, &[], f, g)?;
        record(self, encoder, &d);
        Ok(())
    }
}
