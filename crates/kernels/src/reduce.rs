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

/// What every piece of one two-pass column sum shares: the pipelines, the operands, and
/// the scratch buffer of partial sums.
struct Passes<'a> {
    /// Partial sums of fixed row groups (`colsum_partial`), then the groups in order into
    /// `dst` (`colsum_final`).
    first: wgpu::ComputePipeline,
    last: wgpu::ComputePipeline,
    src: Operand<'a>,
    dst: Operand<'a>,
    /// The partial sums, `groups × cols` values of the compute type.
    partial: wgpu::Buffer,
    cols: u64,
    /// Bytes of one row of partial sums.
    row_bytes: u64,
    /// Row groups per piece at most: what one binding of partial sums holds.
    cap: u64,
}

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
        let dst = Matrix {
            rows: 1,
            cols,
            ..*dst
        };
        let s = Operand::new("src", src, &self.limits, 1)?;
        let d = Operand::new("dst", &dst, &self.limits, 1)?;
        if cols == 0 {
            return Ok(());
        }
        if rows == 0 {
            if !accumulate {
                self.clear(encoder, &dst);
            }
            return Ok(());
        }
        // Few float32 rows, written not added: one pass (`colsum_rows`, matmul/fused.rs).
        if !accumulate && let Some(d) = self.colsum_rows(src, &dst)? {
            record(self, encoder, &[d]);
            return Ok(());
        }
        let segs = segments(rows, &[&s]);
        let passes = self.colsum_passes(s, d, &segs)?;
        let dispatches: Vec<Dispatch<'_>> = segs
            .iter()
            .enumerate()
            .flat_map(|(i, &rows)| passes.piece(self, rows, accumulate || i > 0))
            .collect();
        record(self, encoder, &dispatches);
        Ok(())
    }

    /// Zeroes `m` (a sum over no rows).
    fn clear(&self, encoder: &mut wgpu::CommandEncoder, m: &Matrix<'_>) {
        self.end_pass();
        for p in m.parts {
            encoder.clear_buffer(p.buffer, p.offset, Some(p.len.next_multiple_of(4)));
        }
    }

    /// The two passes over `src`'s pieces `segs` into `dst`: their pipelines, in the type
    /// partial sums are kept in, and the scratch buffer for the largest piece's sums.
    fn colsum_passes<'a>(
        &self,
        src: Operand<'a>,
        dst: Operand<'a>,
        segs: &[(u64, u64)],
    ) -> Result<Passes<'a>, KernelError> {
        let (s, d) = (&src.m, &dst.m);
        // Partial sums in the compute type: the two passes' pipelines.
        let compute = Compute::of(&[self.store(s.dtype)?, self.store(d.dtype)?]);
        let (t, tsize) = match compute {
            Compute::F32 => (DType::F32, 4),
            Compute::F64 => (DType::F64, 8),
        };
        let shape = Matrix { dtype: t, ..*d };
        let kernel = |entry| Flat {
            family: &COLSUM,
            entry,
        };
        let layout = &self.layouts.storage2.1;
        let first = flat_pipeline(
            self,
            &kernel("colsum_partial"),
            layout,
            &[("src", s, Access::Read), ("partial", &shape, Access::Write)],
            Layout::Scalar,
        )?;
        let last = flat_pipeline(
            self,
            &kernel("colsum_final"),
            layout,
            &[("partial", &shape, Access::Read), ("dst", d, Access::Walk)],
            Layout::Scalar,
        )?;
        debug_assert!(self.store(t).is_ok_and(|s| s != Store::F16Packed));
        let cols = d.cols;
        let row_bytes = cols * tsize;
        let cap = (self.limits.max_binding / row_bytes).clamp(1, MAX_GROUPS);
        let most = segs
            .iter()
            .map(|(a, b)| (b - a).div_ceil(64).clamp(1, cap))
            .max()
            .unwrap_or(1);
        Ok(Passes {
            first,
            last,
            src,
            dst,
            partial: self.scratch(COLSUM_SLOT, most * row_bytes),
            cols,
            row_bytes,
            cap,
        })
    }
}

impl<'a> Passes<'a> {
    /// Both passes over rows `r0..r1` of `src`, adding to `dst` when `add`.
    fn piece(&'a self, k: &'a Kernels, (r0, r1): (u64, u64), add: bool) -> [Dispatch<'a>; 2] {
        let (cols, max) = (self.cols, u64::from(k.limits.max_workgroups));
        let n = r1 - r0;
        let per_group = n.div_ceil(n.div_ceil(64).clamp(1, self.cap));
        let groups = n.div_ceil(per_group);
        let bsrc = self.src.bind(r0, r1);
        let part = Bind::Direct {
            buffer: &self.partial,
            offset: 0,
            size: groups * self.row_bytes,
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
        let partial = Dispatch {
            pipeline: self.first.clone(),
            layout: &k.layouts.storage2.0,
            storage: vec![bsrc, part.clone()],
            writes: 0b10,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: [cols.div_ceil(64).min(max) as u32, groups.min(max) as u32, 1],
        };
        let bdst = self.dst.bind(0, 1);
        let params = Params {
            off: [0, bdst.elem() as u32, 0, 0],
            flags: [u32::from(add), 0, 0, 0],
            ..params
        };
        let last = Dispatch {
            pipeline: self.last.clone(),
            layout: &k.layouts.storage2.0,
            storage: vec![part, bdst],
            writes: 0b10,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: grid(cols.div_ceil(64), k.limits.max_workgroups),
        };
        [partial, last]
    }
}
