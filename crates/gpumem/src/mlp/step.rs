//! One training step, with every allocation and free in a fixed order — the order that
//! [`crate::estimate`] adds up and that every backing replays identically.
//!
//! ```text
//! x, y                      the batch (B×inputs, B uint32 labels)
//! for each hidden layer i:  z_i = a_{i-1}·W_i + b_i   (B×H, new)
//!                           a_i = relu(z_i)            (B×H, new, kept for backward)
//!                           free z_i
//! logits = a_{L-1}·W_L + b_L                           (B×classes)
//! stats, dlogits = softmax cross-entropy(logits, y)    (B×2, B×classes); free logits
//! totals = column sums of stats                        (1×2); free stats
//! dW_L, db_L from a_{L-1} and dlogits (into the gradients)
//! d = dlogits·W_Lᵀ                                     (B×H, new); free dlogits
//! for each hidden layer i, last to first:
//!     d *= relu'(a_i); free a_i
//!     dW_i, db_i from a_{i-1} (or x) and d
//!     if i > 0: d' = d·W_iᵀ (B×H, new); free d; d = d'
//! free d, x, y; optimizer update in place; read totals; free totals
//! ```
//!
//! The strategies change this shape, not its spirit:
//! - **gradient accumulation** runs the forward and backward above once per micro-batch of
//!   B/k rows, adding the gradients up, and updates once;
//! - **activation checkpointing** keeps only the output of every segment of layers in the
//!   forward pass (and the whole last segment), and recomputes a segment's activations from
//!   its input just before the backward pass reaches it;
//! - **mixed precision** stores z, a and d as float16, scales the loss gradient by the loss
//!   scale, and unscales the weight gradients before the update, skipping the update (and
//!   halving the scale) if any gradient overflowed.

use super::Mlp;
use super::config::Precision;
use crate::data::Split;
use crate::error::Error;
use crate::exec::ops::{self, Matmul};
use crate::tensor::{DType, Tensor};

const NN: Matmul = Matmul {
    trans_a: false,
    trans_b: false,
    accumulate: false,
};

/// `Aᵀ·B`: weight gradients, summed over the batch (added to what is there when
/// accumulating micro-batches).
fn tn(accumulate: bool) -> Matmul {
    Matmul {
        trans_a: true,
        trans_b: false,
        accumulate,
    }
}

/// `A·Bᵀ`: gradients flowing back to the layer's input.
const NT: Matmul = Matmul {
    trans_a: false,
    trans_b: true,
    accumulate: false,
};

/// Mixed precision's loss scale: PyTorch's `GradScaler` defaults.
pub(crate) const INITIAL_LOSS_SCALE: f32 = 65536.0;
const GROWTH_INTERVAL: u32 = 2000;

/// The rows of one step: real data, or only a row count on the `plan` backing.
#[derive(Debug, Clone, Copy)]
pub enum Batch<'a> {
    Data(&'a Split),
    Planned(u64),
}

impl Batch<'_> {
    pub fn rows(&self) -> u64 {
        match self {
            Batch::Data(s) => s.len() as u64,
            Batch::Planned(n) => *n,
        }
    }
}

/// The rows `start..start + len` of a batch, as data (gathered) or as a count.
enum Micro {
    Data(Split),
    Planned(u64),
}

impl Micro {
    fn of(batch: Batch<'_>, start: u64, len: u64) -> Micro {
        match batch {
            Batch::Data(s) => {
                Micro::Data(s.gather(&(start as usize..(start + len) as usize).collect::<Vec<_>>()))
            }
            Batch::Planned(_) => Micro::Planned(len),
        }
    }

    fn batch(&self) -> Batch<'_> {
        match self {
            Micro::Data(s) => Batch::Data(s),
            Micro::Planned(n) => Batch::Planned(*n),
        }
    }
}

/// `rows` split into `parts` micro-batches as equal as possible (the first ones one row
/// longer), as `(start, len)`.
pub fn micro_batches(rows: u64, parts: u64) -> Vec<(u64, u64)> {
    let parts = parts.clamp(1, rows.max(1));
    let (base, extra) = (rows / parts, rows % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + u64::from(i < extra);
            let r = (start, len);
            start += len;
            r
        })
        .collect()
}

/// The output layer's tensors of one step.
struct Head {
    logits: Tensor,
    stats: Tensor,
    dlogits: Tensor,
}

/// Device tensors a step handed back; they free their memory when dropped.
#[derive(Debug)]
pub struct StepOutputs {
    /// `rows × classes` logits.
    pub logits: Tensor,
    /// `rows × 2`: each row's loss and whether it was classified correctly.
    pub loss_rows: Tensor,
}

/// What a step measured. Loss and accuracy exist only when kernels ran.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepResult {
    pub rows: u64,
    /// Mean cross-entropy over the batch.
    pub loss: Option<f32>,
    /// Rows whose most likely class was the label.
    pub correct: Option<u64>,
    /// Mixed precision only: a gradient overflowed, so the update was skipped and the loss
    /// scale halved.
    pub skipped: bool,
    /// Hidden layers computed again during the backward pass (activation checkpointing).
    pub recomputed_layers: u64,
}

/// What the forward pass leaves for the backward pass: the activations of the last
/// segment of hidden layers, and the outputs of the segments before it.
struct Forward {
    /// `a_i` for the layers of the last segment, in order.
    acts: Vec<Tensor>,
    /// The output of every earlier segment, in order.
    checkpoints: Vec<Tensor>,
}

impl Mlp {
    fn precision(&self) -> Precision {
        self.config.strategy.precision
    }

    /// Hidden layers per checkpoint segment (all of them when checkpointing is off).
    fn segment(&self) -> u64 {
        self.config
            .strategy
            .checkpointing
            .segment(self.config.layers)
    }

    fn upload(&self, batch: Batch<'_>) -> Result<(Tensor, Tensor), Error> {
        let rows = batch.rows();
        if rows == 0 {
            return Err(Error::Shape("a batch needs at least one row".into()));
        }
        let x = Tensor::new(
            &self.device,
            rows,
            self.config.inputs,
            self.precision().data(),
            "x",
        )?;
        let y = Tensor::new(&self.device, rows, 1, DType::U32, "y")?;
        if let Batch::Data(split) = batch {
            if split.x.len() as u64 != rows * self.config.inputs {
                return Err(Error::Shape(format!(
                    "the batch has {} features per row, the network expects {}",
                    split.x.len() / rows as usize,
                    self.config.inputs
                )));
            }
            x.write_f32(&split.x)?;
            y.write(&split.y)?;
        }
        Ok((x, y))
    }

    /// One hidden layer: `relu(input·W_i + b_i)`, through a short-lived `z_i`.
    fn layer(&self, i: usize, input: &Tensor) -> Result<Tensor, Error> {
        let (rows, width, dtype) = (
            input.rows(),
            self.config.hidden,
            self.precision().activations(),
        );
        let layer = &self.layers[i];
        let z = Tensor::new(&self.device, rows, width, dtype, &format!("z{i}"))?;
        ops::matmul(NN, input, &layer.weight, &z, Some(&layer.bias))?;
        let a = Tensor::new(&self.device, rows, width, dtype, &format!("a{i}"))?;
        ops::relu(&z, &a)?;
        Ok(a)
    }

    /// The forward pass through the hidden layers, keeping what the backward pass needs.
    fn forward_for_backward(&self, x: &Tensor) -> Result<Forward, Error> {
        let (layers, segment) = (self.config.layers as usize, self.segment() as usize);
        let last_segment = (layers - 1) / segment * segment;
        let mut fwd = Forward {
            acts: Vec::new(),
            checkpoints: Vec::new(),
        };
        // The current segment's newest activation, when it is not kept.
        let mut scratch: Option<Tensor> = None;
        for i in 0..layers {
            let input = scratch
                .as_ref()
                .or(fwd.acts.last())
                .or(fwd.checkpoints.last())
                .unwrap_or(x);
            let a = self.layer(i, input)?;
            if i >= last_segment {
                fwd.acts.push(a);
            } else if (i + 1) % segment == 0 {
                scratch = None;
                fwd.checkpoints.push(a);
            } else {
                // Replacing frees the previous layer's activation.
                scratch = Some(a);
            }
        }
        Ok(fwd)
    }

    /// The hidden layers' activations `a_0 … a_{L-1}` for input `x`, all kept.
    fn hidden_forward(&self, x: &Tensor) -> Result<Vec<Tensor>, Error> {
        let mut acts: Vec<Tensor> = Vec::with_capacity(self.config.layers as usize);
        for i in 0..self.config.layers as usize {
            let a = self.layer(i, acts.last().unwrap_or(x))?;
            acts.push(a);
        }
        Ok(acts)
    }

    /// Logits, per-row `(loss, correct)` and the loss gradient (times `scale`) for the
    /// last activation.
    fn head(&self, last: &Tensor, y: &Tensor, scale: f32) -> Result<Head, Error> {
        let (rows, classes, dtype) = (last.rows(), self.config.classes, self.precision().data());
        let out = self.layers.last().expect("at least one layer");
        let logits = Tensor::new(&self.device, rows, classes, dtype, "logits")?;
        ops::matmul(NN, last, &out.weight, &logits, Some(&out.bias))?;
        let stats = Tensor::new(&self.device, rows, 2, dtype, "loss per row")?;
        let dlogits = Tensor::new(&self.device, rows, classes, dtype, "logits.grad")?;
        ops::softmax_xent(&logits, y, &stats, &dlogits, scale)?;
        Ok(Head {
            logits,
            stats,
            dlogits,
        })
    }

    /// The backward pass: weight gradients of every layer (added to the existing ones when
    /// `accumulate`), recomputing checkpointed segments as it reaches them.
    fn backward(
        &mut self,
        mut fwd: Forward,
        x: &Tensor,
        dlogits: Tensor,
        accumulate: bool,
    ) -> Result<u64, Error> {
        let (rows, width) = (x.rows(), self.config.hidden);
        let dtype = self.precision().activations();
        let segment = self.segment() as usize;
        let out = self.layers.len() - 1;
        let name = |i: usize| format!("a{i}.grad");
        {
            let a_last = fwd.acts.last().expect("at least one hidden layer");
            ops::matmul(
                tn(accumulate),
                a_last,
                &dlogits,
                &self.grads[out].weight,
                None,
            )?;
            ops::colsum(&dlogits, &self.grads[out].bias, accumulate)?;
        }
        let mut d = Tensor::new(&self.device, rows, width, dtype, &name(out - 1))?;
        ops::matmul(NT, &dlogits, &self.layers[out].weight, &d, None)?;
        drop(dlogits);
        let mut recomputed = 0;
        let mut end = out;
        while end > 0 {
            let start = (end - 1) / segment * segment;
            if fwd.acts.is_empty() {
                // Recompute this segment from its input; its output is the checkpoint.
                let output = fwd
                    .checkpoints
                    .pop()
                    .expect("one checkpoint per earlier segment");
                for i in start..end - 1 {
                    let input = fwd.acts.last().or(fwd.checkpoints.last()).unwrap_or(x);
                    let a = self.layer(i, input)?;
                    fwd.acts.push(a);
                    recomputed += 1;
                }
                fwd.acts.push(output);
            }
            for i in (start..end).rev() {
                let a_i = fwd
                    .acts
                    .pop()
                    .expect("one activation per layer of the segment");
                ops::relu_backward(&d, &a_i)?;
                drop(a_i);
                let input = fwd.acts.last().or(fwd.checkpoints.last()).unwrap_or(x);
                ops::matmul(tn(accumulate), input, &d, &self.grads[i].weight, None)?;
                ops::colsum(&d, &self.grads[i].bias, accumulate)?;
                if i > 0 {
                    let next = Tensor::new(&self.device, rows, width, dtype, &name(i - 1))?;
                    ops::matmul(NT, &d, &self.layers[i].weight, &next, None)?;
                    d = next;
                }
            }
            end = start;
        }
        Ok(recomputed)
    }

    /// One step of training on `batch`: forward, backward, optimizer update.
    pub fn train_step(&mut self, batch: Batch<'_>) -> Result<StepResult, Error> {
        self.step(batch, false).map(|(result, _)| result)
    }

    /// [`Mlp::train_step`] that also hands back the step's logits and per-row losses as
    /// device tensors — the way a loop keeps `outputs` or `loss` tensors for later. They
    /// hold device memory until dropped: keep them in a `Vec` and memory grows every step.
    /// (With gradient accumulation, those of the last micro-batch.)
    pub fn train_step_with_outputs(
        &mut self,
        batch: Batch<'_>,
    ) -> Result<(StepResult, StepOutputs), Error> {
        let (result, kept) = self.step(batch, true)?;
        let outputs = kept.ok_or_else(|| Error::Shape("the step kept no outputs".into()))?;
        Ok((result, outputs))
    }

    fn step(
        &mut self,
        batch: Batch<'_>,
        keep: bool,
    ) -> Result<(StepResult, Option<StepOutputs>), Error> {
        let rows = batch.rows();
        if rows == 0 {
            return Err(Error::Shape("a batch needs at least one row".into()));
        }
        let mixed = self.precision() == Precision::Mixed;
        let loss_scale = if mixed { self.loss_scale } else { 1.0 };
        let mut totals: Option<Tensor> = None;
        let mut kept = None;
        let mut recomputed_layers = 0;
        for (j, (start, len)) in micro_batches(rows, self.config.strategy.accumulation)
            .into_iter()
            .enumerate()
        {
            let micro = Micro::of(batch, start, len);
            let accumulate = j > 0;
            let (x, y) = self.upload(micro.batch())?;
            let fwd = self.forward_for_backward(&x)?;
            let last = fwd.acts.last().unwrap_or(&x);
            let Head {
                logits,
                stats,
                dlogits,
            } = self.head(last, &y, loss_scale / rows as f32)?;
            let logits = keep.then_some(logits);
            let totals = match &mut totals {
                Some(t) => t,
                None => totals.insert(Tensor::new(
                    &self.device,
                    1,
                    2,
                    self.precision().data(),
                    "loss total",
                )?),
            };
            ops::colsum(&stats, totals, accumulate)?;
            let stats = keep.then_some(stats);
            recomputed_layers += self.backward(fwd, &x, dlogits, accumulate)?;
            drop((x, y));
            kept = logits
                .zip(stats)
                .map(|(logits, loss_rows)| StepOutputs { logits, loss_rows });
        }
        let totals = totals.ok_or_else(|| Error::Shape("a batch needs at least one row".into()))?;
        let skipped = if mixed { !self.unscale()? } else { false };
        if !skipped {
            self.update()?;
        }
        let mut result = self.read_totals(&totals, rows)?;
        drop(totals);
        result.skipped = skipped;
        result.recomputed_layers = recomputed_layers;
        Ok((result, kept))
    }

    /// Mixed precision: divides the gradients by the loss scale and says whether they are
    /// all finite, adjusting the scale as PyTorch's `GradScaler` does.
    fn unscale(&mut self) -> Result<bool, Error> {
        let flag = Tensor::new(&self.device, 1, 1, DType::F32, "found inf")?;
        ops::zero(&flag)?;
        for g in &self.grads {
            for t in g.tensors() {
                ops::unscale_check(t, 1.0 / self.loss_scale, &flag)?;
            }
        }
        if !self.device.info().executes {
            return Ok(true);
        }
        let finite = flag.read::<f32>()?[0] == 0.0;
        if finite {
            self.good_steps += 1;
            if self.good_steps == GROWTH_INTERVAL {
                self.loss_scale *= 2.0;
                self.good_steps = 0;
            }
        } else {
            self.loss_scale /= 2.0;
            self.good_steps = 0;
        }
        Ok(finite)
    }

    fn read_totals(&self, totals: &Tensor, rows: u64) -> Result<StepResult, Error> {
        let mut result = StepResult {
            rows,
            loss: None,
            correct: None,
            skipped: false,
            recomputed_layers: 0,
        };
        if self.device.info().executes {
            let t = totals.read_f64()?;
            result.loss = Some((t[0] / rows as f64) as f32);
            result.correct = Some(t[1].round() as u64);
        }
        Ok(result)
    }

    /// The logits (`rows × classes`, row-major) for the rows of `split`: the forward pass.
    pub fn forward(&self, split: &Split) -> Result<Vec<f32>, Error> {
        let (x, _y) = self.upload(Batch::Data(split))?;
        let acts = self.hidden_forward(&x)?;
        let out = self.layers.last().expect("at least one layer");
        let logits = Tensor::new(
            &self.device,
            x.rows(),
            self.config.classes,
            self.precision().data(),
            "logits",
        )?;
        ops::matmul(
            NN,
            acts.last().unwrap_or(&x),
            &out.weight,
            &logits,
            Some(&out.bias),
        )?;
        Ok(logits.read_f64()?.into_iter().map(|v| v as f32).collect())
    }

    /// Mean loss and accuracy over `split`, in batches of `batch` rows (forward only).
    pub fn evaluate(&self, split: &Split, batch: u64) -> Result<(f32, f32), Error> {
        let mut loss = 0.0f64;
        let mut correct = 0u64;
        let indices: Vec<usize> = (0..split.len()).collect();
        for chunk in indices.chunks(batch.max(1) as usize) {
            let part = split.gather(chunk);
            let (x, y) = self.upload(Batch::Data(&part))?;
            let acts = self.hidden_forward(&x)?;
            let Head { stats, .. } = self.head(acts.last().unwrap_or(&x), &y, 1.0)?;
            drop(acts);
            let totals = Tensor::new(&self.device, 1, 2, self.precision().data(), "loss total")?;
            ops::colsum(&stats, &totals, false)?;
            let r = self.read_totals(&totals, x.rows())?;
            loss += f64::from(r.loss.unwrap_or(f32::NAN)) * x.rows() as f64;
            correct += r.correct.unwrap_or(0);
        }
        let n = split.len().max(1) as f64;
        Ok(((loss / n) as f32, (correct as f64 / n) as f32))
    }
}

#[cfg(test)]
mod tests {
    use super::micro_batches;

    #[test]
    fn micro_batches_cover_the_batch() {
        assert_eq!(micro_batches(10, 3), [(0, 4), (4, 3), (7, 3)]);
        assert_eq!(micro_batches(10, 1), [(0, 10)]);
        assert_eq!(micro_batches(2, 5), [(0, 1), (1, 1)]);
    }
}
