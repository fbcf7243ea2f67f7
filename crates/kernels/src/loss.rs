//! Softmax cross-entropy with its gradient, fused (one pass over the logits).

use crate::elementwise::FlatParams;
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::{Operand, segments};
use crate::record::{Dispatch, grid, record};
use crate::shader::{Compute, Layout, Store, prelude};
use crate::view::{DType, Matrix};

const SOURCE: &str = include_str!("softmax_xent.wgsl");

/// The WGSL of `softmax_xent` for logits, stats and dlogits stored as `stores` (labels are
/// u32), computed in f64 when any of them is float64.
pub(crate) fn source([logits, stats, dlogits]: [Store; 3]) -> String {
    let bindings = [
        ("logits", logits),
        ("labels", Store::U32),
        ("stats", stats),
        ("dlogits", dlogits),
    ];
    let mut s = prelude(
        Compute::of(&[logits, stats, dlogits]),
        &bindings,
        Layout::Scalar,
    );
    s.push_str(SOURCE);
    s
}

impl Kernels {
    /// For each of the B rows of `logits` [B×C] with class `labels[r]` (u32, B×1):
    /// `stats[r] = [loss, 1.0 if argmax == label else 0.0]` (B×2) and
    /// `dlogits[r] = (softmax(logits[r]) - onehot(label)) * scale` (B×C; the engine passes
    /// `scale = 1 / batch`). Numerically stable (the row max is subtracted). A label ≥ C
    /// gives a NaN loss. Values may be float32 or float64 (computed in f64 when any is),
    /// logits also float16; stats and dlogits are written row by row and so are never
    /// packed float16.
    pub fn softmax_xent(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        logits: &Matrix<'_>,
        labels: &Matrix<'_>,
        stats: &Matrix<'_>,
        dlogits: &Matrix<'_>,
        scale: f32,
    ) -> Result<(), KernelError> {
        let mut stores = Vec::new();
        for (name, m) in [("logits", logits), ("stats", stats), ("dlogits", dlogits)] {
            let s = match m.dtype {
                d if !d.is_float() => None,
                d => Some(self.store(d)?),
            };
            match s {
                Some(s) if name == "logits" || s != Store::F16Packed => stores.push(s),
                _ => {
                    return Err(KernelError::DType {
                        name: name.to_string(),
                        expected: DType::F32,
                        got: m.dtype,
                    });
                }
            }
        }
        if labels.dtype != DType::U32 {
            return Err(KernelError::DType {
                name: "labels".into(),
                expected: DType::U32,
                got: labels.dtype,
            });
        }
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
        let key = format!(
            "softmax_xent/{}/{}/{}",
            stores[0].tag(),
            stores[1].tag(),
            stores[2].tag()
        );
        let pipeline = self.cache.get(
            &self.device,
            &self.layouts.storage4.1,
            &key,
            "softmax_xent",
            &[],
            || source([stores[0], stores[1], stores[2]]),
        )?;
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
                pipeline: pipeline.clone(),
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
