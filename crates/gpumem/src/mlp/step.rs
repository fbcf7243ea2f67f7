//! One training step, with every allocation and free in a fixed order — the order that
//! [`crate::estimate`] adds up and that every backing replays identically.
//!
//! ```text
//! x, y                      the batch (B×inputs float32, B uint32 labels)
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

use super::Mlp;
use crate::data::Split;
use crate::device::Error;
use crate::exec::ops::{self, Matmul};
use crate::tensor::{DType, Tensor};

const NN: Matmul = Matmul {
    trans_a: false,
    trans_b: false,
    accumulate: false,
};
/// `Aᵀ·B`: weight gradients, summed over the batch.
const TN: Matmul = Matmul {
    trans_a: true,
    trans_b: false,
    accumulate: false,
};
/// `A·Bᵀ`: gradients flowing back to the layer's input.
const NT: Matmul = Matmul {
    trans_a: false,
    trans_b: true,
    accumulate: false,
};

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
}

impl Mlp {
    fn upload(&self, batch: Batch<'_>) -> Result<(Tensor, Tensor), Error> {
        let rows = batch.rows();
        if rows == 0 {
            return Err(Error::Invalid("a batch needs at least one row".into()));
        }
        let x = Tensor::new(&self.device, rows, self.config.inputs, DType::F32, "x")?;
        let y = Tensor::new(&self.device, rows, 1, DType::U32, "y")?;
        if let Batch::Data(split) = batch {
            if split.x.len() as u64 != rows * self.config.inputs {
                return Err(Error::Invalid(format!(
                    "the batch has {} features per row, the network expects {}",
                    split.x.len() / rows as usize,
                    self.config.inputs
                )));
            }
            x.write(&split.x)?;
            y.write(&split.y)?;
        }
        Ok((x, y))
    }

    /// The hidden layers' activations `a_0 … a_{L-1}` for input `x`.
    fn hidden_forward(&self, x: &Tensor) -> Result<Vec<Tensor>, Error> {
        let (rows, width) = (x.rows(), self.config.hidden);
        let mut acts: Vec<Tensor> = Vec::with_capacity(self.config.layers as usize);
        for (i, layer) in self.layers[..self.layers.len() - 1].iter().enumerate() {
            let input = acts.last().unwrap_or(x);
            let z = Tensor::new(&self.device, rows, width, DType::F32, &format!("z{i}"))?;
            ops::matmul(NN, input, &layer.weight, &z, Some(&layer.bias))?;
            let a = Tensor::new(&self.device, rows, width, DType::F32, &format!("a{i}"))?;
            ops::relu(&z, &a)?;
            drop(z);
            acts.push(a);
        }
        Ok(acts)
    }

    /// Logits, per-row `(loss, correct)` and the loss gradient for the last activation.
    fn head(&self, last: &Tensor, y: &Tensor) -> Result<Head, Error> {
        let rows = last.rows();
        let out = self.layers.last().expect("at least one layer");
        let classes = self.config.classes;
        let logits = Tensor::new(&self.device, rows, classes, DType::F32, "logits")?;
        ops::matmul(NN, last, &out.weight, &logits, Some(&out.bias))?;
        let stats = Tensor::new(&self.device, rows, 2, DType::F32, "loss per row")?;
        let dlogits = Tensor::new(&self.device, rows, classes, DType::F32, "logits.grad")?;
        ops::softmax_xent(&logits, y, &stats, &dlogits, 1.0 / rows as f32)?;
        Ok(Head {
            logits,
            stats,
            dlogits,
        })
    }

    /// One step of training on `batch`: forward, backward, optimizer update.
    pub fn train_step(&mut self, batch: Batch<'_>) -> Result<StepResult, Error> {
        self.step(batch, false).map(|(result, _)| result)
    }

    /// [`Mlp::train_step`] that also hands back the step's logits and per-row losses as
    /// device tensors — the way a loop keeps `outputs` or `loss` tensors for later. They
    /// hold device memory until dropped: keep them in a `Vec` and memory grows every step.
    pub fn train_step_with_outputs(
        &mut self,
        batch: Batch<'_>,
    ) -> Result<(StepResult, StepOutputs), Error> {
        let (result, kept) = self.step(batch, true)?;
        let outputs = kept.ok_or_else(|| Error::Invalid("the step kept no outputs".into()))?;
        Ok((result, outputs))
    }

    fn step(
        &mut self,
        batch: Batch<'_>,
        keep: bool,
    ) -> Result<(StepResult, Option<StepOutputs>), Error> {
        let (x, y) = self.upload(batch)?;
        let rows = x.rows();
        let mut acts = self.hidden_forward(&x)?;
        let Head {
            logits,
            stats,
            dlogits,
        } = self.head(acts.last().unwrap_or(&x), &y)?;
        let logits = keep.then_some(logits);
        let totals = Tensor::new(&self.device, 1, 2, DType::F32, "loss total")?;
        ops::colsum(&stats, &totals, false)?;
        let stats = keep.then_some(stats);

        let last = self.layers.len() - 1;
        let a_last = acts.last().expect("at least one hidden layer");
        ops::matmul(TN, a_last, &dlogits, &self.grads[last].weight, None)?;
        ops::colsum(&dlogits, &self.grads[last].bias, false)?;
        let name = |i: usize| format!("a{i}.grad");
        let mut d = Tensor::new(
            &self.device,
            rows,
            self.config.hidden,
            DType::F32,
            &name(last - 1),
        )?;
        ops::matmul(NT, &dlogits, &self.layers[last].weight, &d, None)?;
        drop(dlogits);
        for i in (0..last).rev() {
            let a_i = acts.pop().expect("one activation per hidden layer");
            ops::relu_backward(&d, &a_i)?;
            drop(a_i);
            let input = acts.last().unwrap_or(&x);
            ops::matmul(TN, input, &d, &self.grads[i].weight, None)?;
            ops::colsum(&d, &self.grads[i].bias, false)?;
            if i > 0 {
                let next = Tensor::new(
                    &self.device,
                    rows,
                    self.config.hidden,
                    DType::F32,
                    &name(i - 1),
                )?;
                ops::matmul(NT, &d, &self.layers[i].weight, &next, None)?;
                d = next;
            }
        }
        drop(d);
        drop((x, y));
        self.update()?;
        let result = self.read_totals(&totals, rows)?;
        drop(totals);
        let kept = logits
            .zip(stats)
            .map(|(logits, loss_rows)| StepOutputs { logits, loss_rows });
        Ok((result, kept))
    }

    fn read_totals(&self, totals: &Tensor, rows: u64) -> Result<StepResult, Error> {
        if !self.device.info().executes {
            return Ok(StepResult {
                rows,
                loss: None,
                correct: None,
            });
        }
        let t = totals.read::<f32>()?;
        Ok(StepResult {
            rows,
            loss: Some(t[0] / rows as f32),
            correct: Some(t[1].round() as u64),
        })
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
            DType::F32,
            "logits",
        )?;
        ops::matmul(
            NN,
            acts.last().unwrap_or(&x),
            &out.weight,
            &logits,
            Some(&out.bias),
        )?;
        logits.read()
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
            let Head { stats, .. } = self.head(acts.last().unwrap_or(&x), &y)?;
            drop(acts);
            let totals = Tensor::new(&self.device, 1, 2, DType::F32, "loss total")?;
            ops::colsum(&stats, &totals, false)?;
            let r = self.read_totals(&totals, x.rows())?;
            loss += f64::from(r.loss.unwrap_or(f32::NAN)) * x.rows() as f64;
            correct += r.correct.unwrap_or(0);
        }
        let n = split.len().max(1) as f64;
        Ok(((loss / n) as f32, (correct as f64 / n) as f32))
    }
}
