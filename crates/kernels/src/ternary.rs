//! Flat kernels of three operands, `x2 = f(x0, x1)`: `threshold_backward`, the ReLU's
//! backward pass into a new tensor in one pass (a copy followed by the in-place
//! `relu_backward` writes the result twice and reads it once more).

use crate::elementwise::{Access, Flat, FlatFamily, flat};
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::record::record;
use crate::view::Matrix;

/// The three-operand flat kernels: `x0`, `x1` read, `x2` walked.
pub(crate) const TERNARY: FlatFamily = FlatFamily {
    name: "ternary",
    source: include_str!("ternary.wgsl"),
    bindings: &["x0", "x1", "x2"],
};

impl Kernels {
    /// `dst = grad · (output > 0)`: PyTorch's `threshold_backward` (the ReLU's backward
    /// pass) into a new tensor, in one dispatch per piece. `output` may be the ReLU's
    /// input too (both are positive at the same places). `dst` may not share memory with
    /// `grad` or `output` (a shifted overlap would race); for in place, use
    /// [`Kernels::relu_backward`].
    pub fn threshold_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grad: &Matrix<'_>,
        output: &Matrix<'_>,
        dst: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        for (name, m) in [("grad", grad), ("output", output)] {
            disjoint("dst", dst, name, m)?;
        }
        let ops = [
            ("grad", grad, Access::Read),
            ("output", output, Access::Read),
            ("dst", dst, Access::Walk),
        ];
        let kernel = Flat {
            family: &TERNARY,
            entry: "threshold_backward",
        };
        let layouts = (&self.layouts.storage3.0, &self.layouts.storage3.1);
        let d = flat(self, &kernel, layouts, &ops, &[], [0.0; 4], [0.0; 4])?;
        record(self, encoder, &d);
        Ok(())
    }
}

/// Refuses `a` sharing a word with `b` (words: kernels write packed float16 whole).
fn disjoint(a_name: &str, a: &Matrix<'_>, b_name: &str, b: &Matrix<'_>) -> Result<(), KernelError> {
    let words = |offset: u64, len: u64| offset / 4..(offset + len).div_ceil(4);
    for pa in a.parts {
        for pb in b.parts {
            let (ra, rb) = (words(pa.offset, pa.len), words(pb.offset, pb.len));
            if pa.buffer == pb.buffer && ra.start < rb.end && rb.start < ra.end {
                return Err(KernelError::Parts {
                    name: a_name.to_string(),
                    reason: format!("shares memory with {b_name}; it must be another tensor"),
                });
            }
        }
    }
    Ok(())
}
