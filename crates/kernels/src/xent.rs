//! PyTorch's cross-entropy as the ops autograd records for it: `log_softmax`, `nll_loss`
//! (mean reduction) and their backwards, so the engine's step allocates what PyTorch's
//! does. Row kernels take one row per invocation; the loss is summed by one workgroup per
//! piece into a running sum (a scratch value in the compute type), then divided once, so
//! it is deterministic and needs no atomics however many buffers the batch spans.
//!
//! A B×C output may be packed float16 (two halves per u32 word, on devices without
//! `SHADER_F16`: autocast's float16 `log_softmax` and its backward) when C is even: every
//! row then starts on a word (parts start on words) and covers whole words, so the
//! invocation that owns a row owns its words and writes them pair by pair. With C odd rows
//! share words, and the call is refused.

use crate::elementwise::FlatParams;
use crate::error::KernelError;
use crate::kernels::{Kernels, NLL_SLOT};
use crate::pieces::{Bind, Operand, segments};
use crate::record::{Dispatch, grid, record};
use crate::shader::{Compute, Layout, Store, pair_store, prelude};
use crate::view::{DType, Matrix};

mod fused;

const SOURCE: &str = include_str!("xent.wgsl");

/// The WGSL of the module whose float bindings a, b, c are stored as `stores` (labels are
/// u32 words), computed in f64 when any of them is float64; a and c (the row outputs) get
/// pair stores.
pub(crate) fn source(stores: [Store; 3]) -> String {
    module(stores, &[], 4)
}

/// [`source`] with `extra` bindings after the labels and the uniform at binding `uniform`.
fn module(stores: [Store; 3], extra: &[(&str, Store)], uniform: u32) -> String {
    let mut bindings = vec![
        ("a", stores[0]),
        ("b", stores[1]),
        ("c", stores[2]),
        ("labels", Store::U32),
    ];
    bindings.extend_from_slice(extra);
    let compute = Compute::of(&stores);
    let mut s = prelude(compute, &bindings, Layout::Scalar);
    s.push_str(&pair_store("a", stores[0], compute));
    s.push_str(&pair_store("c", stores[2], compute));
    s.push_str(SOURCE);
    s.push_str(&format!(
        "@group(0) @binding({uniform}) var<uniform> p: Params;\n"
    ));
    s
}

/// One binding of a call.
enum Slot<'a> {
    /// Cut by rows, with the call's other row operands.
    Rows(Operand<'a>),
    /// Bound whole in every dispatch (a scalar).
    Whole(Bind<'a>),
    Unused,
}

/// How a call uses one of its float operands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Read,
    /// Written row by row, each row by one invocation: packed float16 only when every row
    /// covers whole words (an even number of classes).
    Rows,
    /// A 1×1 scalar, read or written by one invocation: never packed float16 (PyTorch keeps
    /// these in float32 under autocast).
    Scalar,
}

impl Kernels {
    /// `out = x - max - log(sum(exp(x - max)))` per row of `x` [B×C] (PyTorch's
    /// `log_softmax` over the classes; stable). A packed float16 `out` [B×C] needs an even
    /// C.
    pub fn log_softmax(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &Matrix<'_>,
        out: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        same_shape("log_softmax", &[("x", x), ("out", out)])?;
        let sx = float_store(self, "log_softmax", "x", x, Use::Read)?;
        let so = float_store(self, "log_softmax", "out", out, Use::Rows)?;
        let t = Compute::of(&[sx, so]).store();
        let slots = [
            rows(self, "x", x)?,
            Slot::Unused,
            rows(self, "out", out)?,
            Slot::Unused,
        ];
        row_kernel(
            self,
            encoder,
            "log_softmax",
            [sx, t, so],
            slots,
            x,
            1,
            0b0100,
        )
    }

    /// `out = grad - exp(logp) * sum(grad)` per row (PyTorch's
    /// `_log_softmax_backward_data`), all [B×C]; a packed float16 `out` needs an even C.
    pub fn log_softmax_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grad: &Matrix<'_>,
        logp: &Matrix<'_>,
        out: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let name = "log_softmax_backward";
        same_shape(name, &[("grad", grad), ("logp", logp), ("out", out)])?;
        let stores = [
            float_store(self, name, "grad", grad, Use::Read)?,
            float_store(self, name, "logp", logp, Use::Read)?,
            float_store(self, name, "out", out, Use::Rows)?,
        ];
        let slots = [
            rows(self, "grad", grad)?,
            rows(self, "logp", logp)?,
            rows(self, "out", out)?,
            Slot::Unused,
        ];
        row_kernel(self, encoder, name, stores, slots, grad, 1, 0b0100)
    }

    /// PyTorch's `nll_loss` with mean reduction: `loss = -(sum over rows r of logp[r,
    /// labels[r]]) / B` and `total_weight = B`, both 1×1 (float32, float64 or native
    /// float16). `logp` is B×C; `labels` has B entries, int64 ([`Matrix::labels_i64`]) or
    /// u32. A label out of range (≥ C) makes the loss NaN. Summed in f32 (f64 when any
    /// operand is float64) by one workgroup per piece of the batch, in a fixed order.
    pub fn nll_loss(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        logp: &Matrix<'_>,
        labels: &Matrix<'_>,
        loss: &Matrix<'_>,
        total_weight: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let name = "nll_loss";
        let (b, c) = (logp.rows, logp.cols);
        let sl = float_store(self, name, "logp", logp, Use::Read)?;
        let (stride, labels) = label_view(name, labels, b)?;
        let s_loss = scalar_store(self, name, "loss", loss)?;
        let s_tw = scalar_store(self, name, "total_weight", total_weight)?;
        if c == 0 {
            return Err(KernelError::Shape("nll_loss: no classes".into()));
        }
        let batch = u32::try_from(b)
            .map_err(|_| KernelError::Unsupported(format!("nll_loss: {b} rows, over 2^32")))?;
        let compute = Compute::of(&[sl, s_loss, s_tw]);
        let t = compute.store();
        let lim = &self.limits;
        let (lp, lab) = (
            Operand::new("logp", logp, lim, 1)?,
            Operand::new("labels", &labels, lim, 1)?,
        );
        let (loss_op, tw_op) = (
            Operand::new("loss", &loss.flat(), lim, 1)?,
            Operand::new("total_weight", &total_weight.flat(), lim, 1)?,
        );
        let pieces = segments(b, &[&lp, &lab]);
        if let [(s, e)] = pieces[..] {
            // One piece: the sum and the mean in one dispatch.
            let one = pipeline(self, [sl, s_loss, s_tw], "nll_loss_one")?;
            let storage = vec![
                lp.bind(s, e),
                loss_op.bind(0, 1),
                tw_op.bind(0, 1),
                lab.bind(s, e),
            ];
            let n = [batch, c as u32, stride, 1];
            let d = dispatch(self, &one, storage, 0b0110, n, [0.0; 4], [1, 1, 1]);
            record(self, encoder, &[d]);
            return Ok(());
        }
        // The running sum: one value in the compute type.
        let acc = self.scratch(NLL_SLOT, compute.size());
        let acc_bind = || Bind::Direct {
            buffer: &acc,
            offset: 0,
            size: compute.size(),
            elem: 0,
            quads: false,
        };
        let sum = pipeline(self, [sl, t, t], "nll_sum")?;
        let mean = pipeline(self, [t, s_loss, s_tw], "nll_mean")?;
        let mut dispatches = Vec::new();
        for (i, (s, e)) in pieces.into_iter().enumerate() {
            let storage = vec![lp.bind(s, e), acc_bind(), self.dummy_bind(), lab.bind(s, e)];
            let n = [(e - s) as u32, c as u32, stride, u32::from(i == 0)];
            dispatches.push(dispatch(
                self,
                &sum,
                storage,
                0b0010,
                n,
                [0.0; 4],
                [1, 1, 1],
            ));
        }
        let storage = vec![
            acc_bind(),
            loss_op.bind(0, 1),
            tw_op.bind(0, 1),
            self.dummy_bind(),
        ];
        let n = [batch, c as u32, stride, 0];
        dispatches.push(dispatch(
            self,
            &mean,
            storage,
            0b0110,
            n,
            [0.0; 4],
            [1, 1, 1],
        ));
        record(self, encoder, &dispatches);
        Ok(())
    }

    /// PyTorch's `nll_loss_backward` (mean reduction): `out[r, j] = -grad_loss /
    /// total_weight` where `j == labels[r]`, 0 elsewhere; a row whose label is out of range
    /// is all zeros. `grad_loss` and `total_weight` are 1×1, `out` B×C (packed float16
    /// only with an even C), `labels` as for [`Kernels::nll_loss`].
    pub fn nll_loss_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grad_loss: &Matrix<'_>,
        labels: &Matrix<'_>,
        total_weight: &Matrix<'_>,
        out: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let name = "nll_loss_backward";
        let so = float_store(self, name, "out", out, Use::Rows)?;
        let (stride, labels) = label_view(name, labels, out.rows)?;
        let sg = scalar_store(self, name, "grad_loss", grad_loss)?;
        let stw = scalar_store(self, name, "total_weight", total_weight)?;
        let lim = &self.limits;
        let slots = [
            rows(self, "out", out)?,
            Slot::Whole(Operand::new("grad_loss", &grad_loss.flat(), lim, 1)?.bind(0, 1)),
            Slot::Whole(Operand::new("total_weight", &total_weight.flat(), lim, 1)?.bind(0, 1)),
            Slot::Rows(Operand::new("labels", &labels, lim, 1)?),
        ];
        row_kernel(
            self,
            encoder,
            name,
            [so, sg, stw],
            slots,
            out,
            stride,
            0b0001,
        )
    }
}

/// Every operand has the first one's rows and columns.
fn same_shape(kernel: &str, ops: &[(&str, &Matrix<'_>)]) -> Result<(), KernelError> {
    let (first, m) = ops[0];
    for (name, o) in &ops[1..] {
        if (o.rows, o.cols) != (m.rows, m.cols) {
            return Err(KernelError::Shape(format!(
                "{kernel}: {first} is {}x{}, {name} is {}x{}",
                m.rows, m.cols, o.rows, o.cols
            )));
        }
    }
    Ok(())
}

/// `labels` planned as `b` rows of u32 words (one per u32 label, two per int64 one: they
/// need only word alignment), and the words per label.
fn label_view<'a>(
    kernel: &str,
    labels: &Matrix<'a>,
    b: u64,
) -> Result<(u32, Matrix<'a>), KernelError> {
    let stride = match labels.dtype {
        DType::I64 => 2,
        DType::U32 => 1,
        got => {
            return Err(KernelError::DType {
                name: "labels".into(),
                expected: DType::I64,
                got,
            });
        }
    };
    if labels.len() != b {
        return Err(KernelError::Shape(format!(
            "{kernel}: {b} rows but {} labels",
            labels.len()
        )));
    }
    let words = Matrix::with_dtype(labels.parts, b, u64::from(stride), DType::U32);
    Ok((stride, words))
}

/// The storage of a float operand, refusing labels, a packed float16 scalar, and a packed
/// float16 operand written by rows that do not cover whole words.
fn float_store(
    k: &Kernels,
    kernel: &str,
    name: &str,
    m: &Matrix<'_>,
    usage: Use,
) -> Result<Store, KernelError> {
    if !m.dtype.is_float() {
        return Err(KernelError::DType {
            name: name.to_string(),
            expected: DType::F32,
            got: m.dtype,
        });
    }
    let s = k.store(m.dtype)?;
    if s != Store::F16Packed {
        return Ok(s);
    }
    match usage {
        Use::Read => Ok(s),
        Use::Rows if m.cols.is_multiple_of(2) => Ok(s),
        Use::Rows => Err(KernelError::Unsupported(format!(
            "{kernel}: {name} is written row by row and cannot be packed float16 with an \
             odd number of classes ({}): its rows do not cover whole u32 words (use float32, \
             an even C, or a device with SHADER_F16)",
            m.cols
        ))),
        Use::Scalar => Err(KernelError::Unsupported(format!(
            "{kernel}: {name} is a 1×1 scalar and cannot be packed float16 \
             (use float32, or a device with SHADER_F16)"
        ))),
    }
}

/// The storage of a 1×1 operand: float32, float64 or native float16; packed float16 is
/// refused (PyTorch keeps these in float32 under autocast).
fn scalar_store(
    k: &Kernels,
    kernel: &str,
    name: &str,
    m: &Matrix<'_>,
) -> Result<Store, KernelError> {
    if m.len() != 1 {
        return Err(KernelError::Shape(format!(
            "{kernel}: {name} has {} elements, expected one",
            m.len()
        )));
    }
    float_store(k, kernel, name, m, Use::Scalar)
}

fn rows<'a>(k: &Kernels, name: &str, m: &Matrix<'a>) -> Result<Slot<'a>, KernelError> {
    Ok(Slot::Rows(Operand::new(name, m, &k.limits, 1)?))
}

fn pipeline(
    k: &Kernels,
    stores: [Store; 3],
    entry: &str,
) -> Result<wgpu::ComputePipeline, KernelError> {
    let key = format!(
        "xent/{}/{}/{}",
        stores[0].tag(),
        stores[1].tag(),
        stores[2].tag()
    );
    let layout = &k.layouts.storage4.1;
    k.cache
        .get(&k.device, layout, &key, entry, &[], || source(stores))
}

fn dispatch<'a>(
    k: &'a Kernels,
    pipeline: &wgpu::ComputePipeline,
    storage: Vec<Bind<'a>>,
    writes: u32,
    n: [u32; 4],
    f: [f32; 4],
    groups: [u32; 3],
) -> Dispatch<'a> {
    let mut off = [0u32; 4];
    for (o, b) in off.iter_mut().zip(&storage) {
        *o = b.elem() as u32;
    }
    let params = FlatParams {
        n,
        off,
        f,
        g: [0.0; 4],
    };
    Dispatch {
        pipeline: pipeline.clone(),
        layout: &k.layouts.storage4.0,
        storage,
        writes,
        params: bytemuck::bytes_of(&params).to_vec(),
        groups,
    }
}

/// Records a one-row-per-invocation kernel over the rows of `shape`, one dispatch per
/// piece its row operands share; `writes` are the slots it writes.
#[allow(clippy::too_many_arguments)]
fn row_kernel(
    k: &Kernels,
    encoder: &mut wgpu::CommandEncoder,
    entry: &str,
    stores: [Store; 3],
    slots: [Slot<'_>; 4],
    shape: &Matrix<'_>,
    stride: u32,
    writes: u32,
) -> Result<(), KernelError> {
    let (b, c) = (shape.rows, shape.cols);
    if c == 0 {
        return Ok(());
    }
    let pipeline = pipeline(k, stores, entry)?;
    let ops: Vec<&Operand<'_>> = slots
        .iter()
        .filter_map(|s| match s {
            Slot::Rows(o) => Some(o),
            _ => None,
        })
        .collect();
    let mut dispatches = Vec::new();
    for (s, e) in segments(b, &ops) {
        let storage: Vec<Bind<'_>> = slots
            .iter()
            .map(|slot| match slot {
                Slot::Rows(o) => o.bind(s, e),
                Slot::Whole(w) => w.clone(),
                Slot::Unused => k.dummy_bind(),
            })
            .collect();
        // A packed output's rows own whole words only from an even element on (parts start
        // on words, so with an even C they always do; checked, not assumed).
        for (i, bind) in storage.iter().take(3).enumerate() {
            if writes & (1 << i) != 0 && stores[i] == Store::F16Packed && bind.elem() % 2 != 0 {
                return Err(KernelError::Unsupported(format!(
                    "{entry}: a packed float16 output starts at an odd element offset ({}) in \
                     its binding, so its rows do not cover whole u32 words",
                    bind.elem()
                )));
            }
        }
        let n = [(e - s) as u32, c as u32, stride, 0];
        let groups = grid((e - s).div_ceil(64), k.limits.max_workgroups);
        dispatches.push(dispatch(k, &pipeline, storage, writes, n, [0.0; 4], groups));
    }
    record(k, encoder, &dispatches);
    Ok(())
}
