//! The one `match` that runs each operation as WGSL dispatches.

use super::GpuExecutor;
use crate::dtype::DType;
use crate::error::Error;
use crate::exec::Memory;
use crate::exec::op::{AdamStep, Matmul, Op, Operand};
use crate::segments::{BufferStore, parts};
use gpumem_kernels::{DType as KernelDType, Gemm, KernelError, Kernels, Matrix, Part};

fn kernel_error(e: KernelError) -> Error {
    match e {
        KernelError::Shape(_) | KernelError::DType { .. } | KernelError::RowTooLarge { .. } => {
            Error::Shape(format!("wgpu kernel: {e}"))
        }
        // What this adapter cannot do (float64 without SHADER_F64): a setup to change.
        KernelError::Unsupported(what) => Error::Unsupported(what),
        other => Error::Device(format!("wgpu kernel: {other}")),
    }
}

/// The buffers of a `wgpu` device's memory.
pub(super) fn store(mem: &Memory) -> Result<&BufferStore, Error> {
    mem.store()
        .buffers()
        .ok_or_else(|| Error::Device("not a wgpu device".into()))
}

/// The segments and the placements of one device's tensors, for resolving operands.
struct Views<'m> {
    mem: &'m Memory,
    store: &'m BufferStore,
}

impl<'m> Views<'m> {
    fn new(mem: &'m Memory) -> Result<Self, Error> {
        Ok(Self {
            mem,
            store: store(mem)?,
        })
    }

    /// The parts of `t`'s bytes, as kernel views.
    fn parts(&self, t: &Operand) -> Result<Vec<Part<'m>>, Error> {
        let p = self
            .mem
            .placement(t.block)
            .ok_or_else(|| Error::Device(format!("{}: its block was freed", t.label)))?;
        Ok(
            parts(self.store, p.segment, p.offset + t.offset, t.bytes())?
                .into_iter()
                .map(|r| Part {
                    buffer: r.buffer,
                    offset: r.offset,
                    len: r.len,
                })
                .collect(),
        )
    }
}

fn matrix<'a>(t: &Operand, parts: &'a [Part<'a>]) -> Matrix<'a> {
    let dtype = match t.dtype {
        DType::U32 => return Matrix::labels(parts, t.len()),
        DType::I64 => return Matrix::labels_i64(parts, t.len()),
        DType::F16 => KernelDType::F16,
        DType::F32 => KernelDType::F32,
        DType::F64 => KernelDType::F64,
    };
    Matrix::with_dtype(parts, t.rows, t.cols, dtype)
}

/// `c = op(a)·op(b) (+ bias)` as the kernels take it.
fn gemm<'a>(
    spec: Matmul,
    a: Matrix<'a>,
    b: Matrix<'a>,
    c: Matrix<'a>,
    bias: Option<Matrix<'a>>,
) -> Gemm<'a> {
    Gemm {
        a,
        trans_a: spec.trans_a,
        b,
        trans_b: spec.trans_b,
        c,
        accumulate: false,
        bias,
    }
}

fn adam_hyper(hp: AdamStep) -> gpumem_kernels::Adam {
    gpumem_kernels::Adam {
        lr: hp.lr,
        beta1: hp.beta1,
        beta2: hp.beta2,
        eps: hp.eps,
        step: hp.step,
    }
}

/// A recording: the kernels, the pending encoder, and the views of the operands.
type Record<'a> =
    dyn FnOnce(&Kernels, &mut wgpu::CommandEncoder, &[Matrix<'_>]) -> Result<(), KernelError> + 'a;

impl GpuExecutor {
    /// Records `op` into the pending encoder.
    pub(crate) fn run(&self, mem: &Memory, op: &Op) -> Result<(), Error> {
        // A lost device fails here, as a value, before anything is recorded on it.
        self.check()?;
        let views = Views::new(mem)?;
        let operands = op.operands();
        let all: Vec<Vec<Part<'_>>> = operands
            .iter()
            .map(|t| views.parts(t))
            .collect::<Result<_, _>>()?;
        let m: Vec<Matrix<'_>> = operands
            .iter()
            .zip(&all)
            .map(|(t, p)| matrix(t, p))
            .collect();
        let kernels = self.kernels()?;
        self.record(|encoder| {
            kernels
                .recording(self.step_cache(), |k| record(op)(k, encoder, &m))
                .map_err(kernel_error)
        })
    }
}

/// What `op` records, given the views of [`Op::operands`] in their order.
fn record(op: &Op) -> Box<Record<'_>> {
    use Op::*;
    match op {
        Matmul { spec, bias, .. } => {
            let (spec, biased) = (*spec, bias.is_some());
            Box::new(move |k, e, m| k.matmul(e, &product(spec, biased, m)))
        }
        Relu { .. } => Box::new(|k, e, m| k.relu(e, &m[0], &m[1])),
        ReluInPlace { .. } => Box::new(|k, e, m| k.relu(e, &m[0], &m[0])),
        Colsum { .. } => Box::new(|k, e, m| k.colsum(e, &m[0], &m[1], false)),
        Sgd { lr, .. } => Box::new(move |k, e, m| k.sgd(e, &m[0], &m[1], *lr)),
        SgdForeach { lr, .. } => Box::new(move |k, e, m| {
            let pairs: Vec<(Matrix<'_>, Matrix<'_>)> =
                m.chunks_exact(2).map(|pg| (pg[0], pg[1])).collect();
            k.sgd_foreach(e, &pairs, *lr)
        }),
        Adam { hp, .. } => {
            let h = adam_hyper(*hp);
            Box::new(move |k, e, m| k.adam(e, &m[0], &m[1], &m[2], &m[3], &h))
        }
        AdamDenom { scale, eps, .. } => Box::new(move |k, e, m| {
            k.adam_denom(e, &m[0], &m[1], f64::from(*scale), f64::from(*eps))
        }),
        UnscaleCheck { factor, .. } => {
            Box::new(move |k, e, m| k.unscale_check(e, &m[0], *factor, &m[1]))
        }
        Zero { .. } => Box::new(|k, e, m| {
            // The clear cannot join the step's open compute pass.
            k.end_pass();
            for part in m[0].parts {
                // Parts are 4-byte multiples except possibly a 2-byte tail (float16); the
                // block is 512-byte rounded, so clearing up to the next word stays inside it.
                e.clear_buffer(part.buffer, part.offset, Some(part.len.next_multiple_of(4)));
            }
            Ok(())
        }),
        Copy { .. } => Box::new(|k, e, m| k.copy(e, &m[0], &m[1])),
        // One pass: `dst` written once (not a copy of `grad`, then masked in place).
        ThresholdBackward { .. } => {
            Box::new(|k, e, m| k.threshold_backward(e, &m[0], &m[1], &m[2]))
        }
        LogSoftmax { .. } => Box::new(|k, e, m| k.log_softmax(e, &m[0], &m[1])),
        NllLoss { .. } => Box::new(|k, e, m| k.nll_loss(e, &m[0], &m[1], &m[2], &m[3])),
        NllLossBackward { .. } => {
            Box::new(|k, e, m| k.nll_loss_backward(e, &m[0], &m[1], &m[2], &m[3]))
        }
        LogSoftmaxBackward { .. } => {
            Box::new(|k, e, m| k.log_softmax_backward(e, &m[0], &m[1], &m[2]))
        }
        Fill { value, .. } => Box::new(move |k, e, m| k.fill(e, &m[0], f64::from(*value))),
        Scale { factor, .. } => Box::new(move |k, e, m| k.scale(e, &m[0], *factor)),
        Add { .. } => Box::new(|k, e, m| k.add(e, &m[0], &m[1])),
        MatmulRelu { product: p, .. } => {
            let Some((spec, biased)) = matmul_of(p) else {
                return Box::new(|_, _, _| Err(not_a_pair()));
            };
            // Views: the product's operands, then the ReLU's output.
            Box::new(move |k, e, m| {
                let (prod, out) = m.split_at(m.len() - 1);
                k.matmul_relu(e, &product(spec, biased, prod), &out[0])
            })
        }
        MatmulColsum { product: p, .. } => {
            let Some((spec, _)) = matmul_of(p) else {
                return Box::new(|_, _, _| Err(not_a_pair()));
            };
            Box::new(move |k, e, m| k.matmul_colsum(e, &product(spec, false, &m[..3]), &m[3]))
        }
        // Views: the loss's operands (logp, labels, loss, total_weight), then `x`.
        LogSoftmaxNllLoss { .. } => {
            Box::new(|k, e, m| k.log_softmax_nll_loss(e, &m[4], &m[0], &m[1], &m[2], &m[3]))
        }
        FillNllLossBackward { value, .. } => {
            Box::new(move |k, e, m| k.fill_nll_loss_backward(e, &m[0], *value, &m[1], &m[2], &m[3]))
        }
        AdamWithDenom { step, denom } => {
            let (Adam { hp, .. }, AdamDenom { scale, eps, .. }) = (&**step, &**denom) else {
                return Box::new(|_, _, _| Err(not_a_pair()));
            };
            let (h, scale, eps) = (adam_hyper(*hp), *scale, *eps);
            // Views: param, grad, m, v, then the denominator's v and dst.
            Box::new(move |k, e, m| {
                let t = gpumem_kernels::optim_fused::AdamTensors {
                    param: m[0],
                    grad: m[1],
                    m: m[2],
                    v: m[3],
                    denom: m[5],
                };
                k.adam_with_denom(e, &t, &h, f64::from(scale), f64::from(eps))
            })
        }
    }
}

/// The product of `a`, `b` into `c` (and `bias`), from their views in that order.
fn product<'a>(spec: Matmul, biased: bool, m: &[Matrix<'a>]) -> Gemm<'a> {
    let bias = biased.then(|| m[3]);
    gemm(spec, m[0], m[1], m[2], bias)
}

fn matmul_of(op: &Op) -> Option<(Matmul, bool)> {
    match op {
        Op::Matmul { spec, bias, .. } => Some((*spec, bias.is_some())),
        _ => None,
    }
}

/// A joined operation whose parts are not the pair `fusion` makes: a bug, reported as one.
fn not_a_pair() -> KernelError {
    KernelError::Shape("a fused operation of the wrong parts".into())
}
