//! Elementwise kernels: `relu`, `relu_backward`, `scale`, `add`.
//!
//! Elementwise operands are viewed flat (`len × 1`), so pieces can be cut at any element
//! and no row ever straddles two parts.

use crate::pieces::{Operand, segments};
use crate::record::{Dispatch, grid, record};
use crate::view::{DType, Matrix};
use crate::{KernelError, Kernels, Layouts, expect_dtype, pipelines};

pub(crate) struct Pipelines {
    relu: wgpu::ComputePipeline,
    relu_backward: wgpu::ComputePipeline,
    scale: wgpu::ComputePipeline,
    add: wgpu::ComputePipeline,
}

impl Pipelines {
    pub fn new(device: &wgpu::Device, layouts: &Layouts) -> Result<Self, KernelError> {
        let mut p = pipelines(
            device,
            "elementwise",
            include_str!("elementwise.wgsl"),
            &layouts.storage2.1,
            &["relu", "relu_backward", "scale", "add"],
            &[],
        )?
        .into_iter();
        let mut next = || {
            p.next()
                .ok_or_else(|| KernelError::Pipeline("elementwise".into()))
        };
        Ok(Pipelines {
            relu: next()?,
            relu_backward: next()?,
            scale: next()?,
            add: next()?,
        })
    }
}

/// Uniforms shared by the flat kernels (64 bytes, WGSL `Params` in each .wgsl file).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct FlatParams {
    pub n: [u32; 4],
    pub off: [u32; 4],
    pub f: [f32; 4],
    pub g: [f32; 4],
}

/// One flat operand: name for errors, the matrix, whether the kernel writes it.
pub(crate) type FlatOperand<'a, 'm> = (&'static str, &'m Matrix<'a>, bool);

/// Plans a flat kernel over operands of equal length, one dispatch per common piece;
/// unused bindings up to `slots` get the dummy buffer.
pub(crate) fn flat<'a>(
    k: &'a Kernels,
    pipeline: &'a wgpu::ComputePipeline,
    layout: &'a wgpu::BindGroupLayout,
    slots: usize,
    operands: &[FlatOperand<'a, '_>],
    f: [f32; 4],
    g: [f32; 4],
) -> Result<Vec<Dispatch<'a>>, KernelError> {
    let n = operands.first().map_or(0, |o| o.1.len());
    let mut ops = Vec::new();
    for (name, m, _) in operands {
        expect_dtype(name, m, DType::F32)?;
        if m.len() != n {
            return Err(KernelError::Shape(format!(
                "{name} has {} elements, {} has {n}",
                m.len(),
                operands[0].0
            )));
        }
        ops.push(Operand::new(name, &m.flat(), &k.limits, 1)?);
    }
    let writes = operands
        .iter()
        .enumerate()
        .filter(|(_, o)| o.2)
        .fold(0, |w, (i, _)| w | 1 << i);
    let refs: Vec<&Operand<'a>> = ops.iter().collect();
    let mut out = Vec::new();
    for (s, e) in segments(n, &refs) {
        let mut storage: Vec<_> = ops.iter().map(|o| o.bind(s, e)).collect();
        let mut off = [0u32; 4];
        for (o, b) in off.iter_mut().zip(&storage) {
            *o = b.elem() as u32;
        }
        while storage.len() < slots {
            storage.push(k.dummy_bind());
        }
        let params = FlatParams {
            n: [(e - s) as u32, 0, 0, 0],
            off,
            f,
            g,
        };
        out.push(Dispatch {
            pipeline,
            layout,
            storage,
            writes,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: grid((e - s).div_ceil(64), k.limits.max_workgroups),
        });
    }
    Ok(out)
}

impl Kernels {
    /// `dst = max(src, 0)`. `src` and `dst` may be the same tensor.
    pub fn relu(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &Matrix<'_>,
        dst: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("src", src, false), ("dst", dst, true)];
        self.run_flat2(encoder, &self.elementwise.relu, &ops, 0.0)
    }

    /// `grad *= (activation > 0)`, in place. `activation` may be the ReLU's input or its
    /// output (both are positive at the same places).
    pub fn relu_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grad: &Matrix<'_>,
        activation: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("grad", grad, true), ("activation", activation, false)];
        self.run_flat2(encoder, &self.elementwise.relu_backward, &ops, 0.0)
    }

    /// `x *= factor`.
    pub fn scale(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &Matrix<'_>,
        factor: f32,
    ) -> Result<(), KernelError> {
        self.run_flat2(encoder, &self.elementwise.scale, &[("x", x, true)], factor)
    }

    /// `dst += src`.
    pub fn add(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dst: &Matrix<'_>,
        src: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("dst", dst, true), ("src", src, false)];
        self.run_flat2(encoder, &self.elementwise.add, &ops, 0.0)
    }

    fn run_flat2(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        operands: &[FlatOperand<'_, '_>],
        f0: f32,
    ) -> Result<(), KernelError> {
        let layout = &self.layouts.storage2.0;
        let d = flat(
            self,
            pipeline,
            layout,
            2,
            operands,
            [f0, 0.0, 0.0, 0.0],
            [0.0; 4],
        )?;
        record(self, encoder, &d);
        Ok(())
    }
}
