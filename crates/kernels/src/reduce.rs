//! Column sums (bias gradients, summing per-row loss statistics).

use crate::elementwise::{Access, Flat, FlatFamily, flat_pipeline};
use crate::error::KernelError;
use crate::kernels::{COLSUM_SLOT, Kernels};
use crate::pieces::{Bind, Operand, segments};
use crate::record::{Dispatch, grid, record};
use crate::shader::{Compute, Layout, Store};
use crate::view::{DType, Matrix};

/// Column sums in two deterministic passes.
pub(crate) const COLSUM: FlatFamily = FlatFamily {
    name: "colsum",
    source: include_str!("colsum.wgsl"),
    bindings: &["x0", "x1"],
};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    cols: u32,
    groups: u32,
    rows_per_group: u32,
    off: [u32; 4],
    flags: [u32; 4],
    pad: [u32; 4],
}

/// At most this many row groups per piece: enough parallel work, a short final pass.
const MAX_GROUPS: u64 = 1024;

impl Kernels {
    /// `dst (+)= sum over rows of src`: src is R×C, dst has C elements. One pass down each
    /// column for a few float32 rows written anew, else two levels (fixed row groups, then
    /// the groups in order); either way the result is deterministic;
    /// pieces of a tall src run one after another, accumulating. Sums are kept in f32 (f64
    /// when either is float64); src may be any float type (mixed precision sums float16
    /// gradients into a float32 bias gradient), dst too.
    pub fn colsum(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &Matrix<'_>,
        dst: &Matrix<'_>,
        accumulate: bool,
    ) -> Result<(), KernelError> {
        let (rows, cols) = (src.rows, src.cols);
        if dst.len() != cols {
            return Err(KernelError::Shape(format!(
                "colsum: src has {cols} columns, dst has {} elements",
                dst.len()
            )));
        }
        let lim = &self.limits;
        let dst = Matrix {
            rows: 1,
            cols,
            ..*dst
        };
        let s = Operand::new("src", src, lim, 1)?;
        let d = Operand::new("dst", &dst, lim, 1)?;
        if cols == 0 {
            return Ok(());
        }
        if rows == 0 {
            if !accumulate {
                self.end_pass();
                for p in dst.parts {
                    encoder.clear_buffer(p.buffer, p.offset, Some(p.len.next_multiple_of(4)));
                }
            }
            return Ok(());
        }
        // Few float32 rows, written not added: one pass (`colsum_rows`, matmul/fused.rs).
        if !accumulate && let Some(d) = self.colsum_rows(src, &dst)? {
            record(self, encoder, &[d]);
            return Ok(());
        }
        // Partial sums in the compute type: the two passes' pipelines.
        let compute = Compute::of(&[self.store(src.dtype)?, self.store(dst.dtype)?]);
        let (t, tsize) = match compute {
            Compute::F32 => (DType::F32, 4),
            Compute::F64 => (DType::F64, 8),
        };
        let shape = Matrix { dtype: t, ..dst };
        let kernel = |entry| Flat {
            family: &COLSUM,
            entry,
        };
        let layout = &self.layouts.storage2.1;
        let first = flat_pipeline(
            self,
            &kernel("colsum_partial"),
            layout,
            &[
                ("src", src, Access::Read),
                ("partial", &shape, Access::Write),
            ],
            Layout::Scalar,
        )?;
        let last = flat_pipeline(
            self,
            &kernel("colsum_final"),
            layout,
            &[
                ("partial", &shape, Access::Read),
                ("dst", &dst, Access::Walk),
            ],
            Layout::Scalar,
        )?;
        debug_assert!(self.store(t).is_ok_and(|s| s != Store::F16Packed));
        let segs = segments(rows, &[&s]);
        let row_bytes = cols * tsize;
        let cap = (lim.max_binding / row_bytes).clamp(1, MAX_GROUPS);
        let most = segs
            .iter()
            .map(|(a, b)| (b - a).div_ceil(64).clamp(1, cap))
            .max()
            .unwrap_or(1);
        let partial = self.scratch(COLSUM_SLOT, most * row_bytes);
        let mut dispatches: Vec<Dispatch<'_>> = Vec::new();
        for (i, &(r0, r1)) in segs.iter().enumerate() {
            let n = r1 - r0;
            let per_group = n.div_ceil(n.div_ceil(64).clamp(1, cap));
            let groups = n.div_ceil(per_group);
            let bsrc = s.bind(r0, r1);
            let part = Bind::Direct {
                buffer: &partial,
                offset: 0,
                size: groups * row_bytes,
                elem: 0,
                quads: false,
            };
            let params = Params {
                rows: n as u32,
                cols: cols as u32,
                groups: groups as u32,
                rows_per_group: per_group as u32,
                off: [bsrc.elem() as u32, 0, 0, 0],
                ..Params::default()
            };
            let max = u64::from(lim.max_workgroups);
            dispatches.push(Dispatch {
                pipeline: first.clone(),
                layout: &self.layouts.storage2.0,
                storage: vec![bsrc, part.clone()],
                writes: 0b10,
                params: bytemuck::bytes_of(&params).to_vec(),
                groups: [cols.div_ceil(64).min(max) as u32, groups.min(max) as u32, 1],
            });
            let bdst = d.bind(0, 1);
            let params = Params {
                off: [0, bdst.elem() as u32, 0, 0],
                flags: [u32::from(accumulate || i > 0), 0, 0, 0],
                ..params
            };
            dispatches.push(Dispatch {
                pipeline: last.clone(),
                layout: &self.layouts.storage2.0,
                storage: vec![part, bdst],
                writes: 0b10,
                params: bytemuck::bytes_of(&params).to_vec(),
                groups: grid(cols.div_ceil(64), lim.max_workgroups),
            });
        }
        record(self, encoder, &dispatches);
        Ok(())
    }
}
