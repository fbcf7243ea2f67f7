//! One training step of the lesson's loop, as PyTorch 2.x runs it on CUDA:
//!
//! ```text
//! optimizer.zero_grad()          # gradients set to None (freed)
//! y_pred = model(x)              # frees the previous step's y_pred once the new one exists
//! loss = F.cross_entropy(y_pred, y)
//! loss.backward()                # walks the autograd tape; gradients appear here
//! optimizer.step()               # optimizer state appears at the first step
//! ```
//!
//! with gradient accumulation as `k` row slices of the batch (views: no copy), each loss
//! divided by `k` (or weighed by its rows: [`super::LossWeighting`]); `torch.autocast` and `GradScaler` for mixed precision. Every tensor is
//! allocated and freed where PyTorch allocates and frees it (see [`super::autograd`]), so the
//! allocator sees PyTorch's sequence of requests on every backing.

use super::Mlp;
use super::Pass;
use super::autograd::{Node, Tape};
use super::backward::Seed;
use super::batch::Batch;
use super::eval::scores;
use super::forward::scaled;
use crate::error::Error;
use crate::role::Role;
use crate::tensor::{DType, Tensor};

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

/// The micro-batches a step runs: all of them, or with a `limit` only the first `limit`
/// and the last (whose `y_pred` and loss the loop keeps).
pub(crate) fn planned_micro_batches(rows: u64, parts: u64, limit: Option<u64>) -> Vec<(u64, u64)> {
    let all = micro_batches(rows, parts);
    match limit {
        Some(n) if (n as usize) < all.len() => {
            let mut some = all[..n as usize].to_vec();
            some.extend(all.last().copied());
            some
        }
        _ => all,
    }
}

/// The rows of `batch`, or why a step cannot take it: the one check of an empty batch that
/// reaches the network (its data, or a planned count, straight from a caller of the step).
fn rows_of(batch: Batch<'_>) -> Result<u64, Error> {
    match batch.rows() {
        0 => Err(Error::Shape("a batch needs at least one row".into())),
        rows => Ok(rows),
    }
}

/// Device tensors a step handed back: the loop's `y_pred` and `loss`. They hold device
/// memory until dropped: keep them in a `Vec` and memory grows every step.
#[derive(Debug)]
pub struct StepOutputs {
    /// `rows × classes` logits (`y_pred`; with accumulation, the last micro-batch's).
    pub logits: Tensor,
    /// The loss, one value (with accumulation, the last micro-batch's, scaled by its
    /// [`super::LossWeighting::factor`]).
    pub loss: Tensor,
}

/// What a step measured. Loss and accuracy exist only when kernels ran.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepResult {
    pub rows: u64,
    /// Mean cross-entropy over the batch.
    pub loss: Option<f32>,
    /// Rows whose most likely class was the label (read back from `y_pred`).
    pub correct: Option<u64>,
    /// Mixed precision only: a gradient overflowed, so the update was skipped and the loss
    /// scale halved.
    pub skipped: bool,
    /// Hidden layers computed again during the backward pass (activation checkpointing).
    pub recomputed_layers: u64,
}

/// Loss and accuracy summed over micro-batches.
#[derive(Debug, Default)]
struct Totals {
    loss: f64,
    correct: u64,
}

/// A step between backward and `optimizer.step()`: the batch (alive until the update) and
/// what was counted so far.
#[derive(Debug)]
pub(crate) struct Pending {
    x: Tensor,
    y: Tensor,
    totals: Totals,
    recomputed_layers: u64,
}

impl Mlp {
    /// The batch on the device: `x` (rows × inputs) and `y` (int64 labels).
    pub(super) fn upload(&self, batch: Batch<'_>) -> Result<(Tensor, Tensor), Error> {
        let rows = rows_of(batch)?;
        let dtype = self.precision().data();
        let x = Tensor::new(
            &self.device,
            rows,
            self.config.inputs,
            dtype,
            Role::Input,
            "x",
        )?;
        let y = Tensor::new(&self.device, rows, 1, DType::I64, Role::Labels, "y")?;
        if let Batch::Data(split) = batch {
            if split.x.len() as u64 != rows * self.config.inputs {
                return Err(Error::Shape(format!(
                    "the batch has {} features per row, the network expects {}",
                    split.x.len() / rows as usize,
                    self.config.inputs
                )));
            }
            x.write_f32(&split.x)?;
            y.write(&split.y.iter().map(|&l| i64::from(l)).collect::<Vec<_>>())?;
        }
        Ok((x, y))
    }

    /// One step of training on `batch`: forward, backward, optimizer update.
    pub fn train_step(&mut self, batch: Batch<'_>) -> Result<StepResult, Error> {
        self.step(batch)
    }

    /// [`Mlp::train_step`] that also hands back the step's `y_pred` and `loss` — the way a
    /// loop that appends them to a list keeps them alive.
    pub fn train_step_with_outputs(
        &mut self,
        batch: Batch<'_>,
    ) -> Result<(StepResult, StepOutputs), Error> {
        let result = self.step(batch)?;
        let (Some(logits), Some(loss)) = (self.kept.y_pred.clone(), self.kept.loss.clone()) else {
            return Err(Error::Shape("the step kept no outputs".into()));
        };
        Ok((result, StepOutputs { logits, loss }))
    }

    fn step(&mut self, batch: Batch<'_>) -> Result<StepResult, Error> {
        let pending = self.forward_backward(batch)?;
        self.finish_step(batch, pending)
    }

    /// The step up to `optimizer.step()`: `zero_grad()`, the batch, and forward and backward
    /// of every micro-batch. A multi-card scheme reduces the gradients before
    /// [`Mlp::finish_step`].
    pub(crate) fn forward_backward(&mut self, batch: Batch<'_>) -> Result<Pending, Error> {
        let rows = rows_of(batch)?;
        self.pass = Pass::Optimizer;
        self.zero_grad()?;
        self.pass = Pass::Forward;
        let (x, y) = self.upload(batch)?;
        let k = self.config.strategy.accumulation;
        let weighting = self.config.strategy.loss_weighting;
        let mut totals = Totals::default();
        let mut recomputed_layers = 0;
        for (start, len) in planned_micro_batches(rows, k, self.micro_batch_limit) {
            let (xb, yb) = if len == rows {
                (x.clone(), y.clone())
            } else {
                (x.rows_view(start, len)?, y.rows_view(start, len)?)
            };
            // With one micro-batch the loss is used as it is (no scaled copy).
            let factor = (k > 1).then(|| weighting.factor(rows, k, len) as f32);
            recomputed_layers += self.micro_step(&xb, &yb, factor)?;
            // Reading results waits for the device: with one micro-batch, only once the
            // update is queued too.
            if k > 1 {
                self.add_scores(batch, start, len, &mut totals)?;
            }
        }
        Ok(Pending {
            x,
            y,
            totals,
            recomputed_layers,
        })
    }

    /// `optimizer.step()` and the step's results, after [`Mlp::forward_backward`].
    pub(crate) fn finish_step(
        &mut self,
        batch: Batch<'_>,
        pending: Pending,
    ) -> Result<StepResult, Error> {
        let Pending {
            x,
            y,
            mut totals,
            recomputed_layers,
        } = pending;
        let rows = batch.rows();
        // `x` and `y` are the loop's variables: alive through `optimizer.step()`.
        self.pass = Pass::Optimizer;
        let skipped = self.optimizer_step()?;
        drop((x, y));
        let executes = self.device.info().executes;
        if self.config.strategy.accumulation == 1 {
            self.add_scores(batch, 0, rows, &mut totals)?;
        }
        Ok(StepResult {
            rows,
            loss: executes.then_some((totals.loss / rows as f64) as f32),
            correct: executes.then_some(totals.correct),
            skipped,
            recomputed_layers,
        })
    }

    /// Forward and backward of one micro-batch, its loss scaled by `factor` (a new tensor)
    /// if there is one; returns the layers computed again.
    fn micro_step(&mut self, x: &Tensor, y: &Tensor, factor: Option<f32>) -> Result<u64, Error> {
        self.pass = Pass::Forward;
        let mut tape = Tape::default();
        let mut cache = self.autocast_region();
        let y_pred = self.forward_pass(x, &mut tape, &mut cache)?;
        // Rebinding `y_pred` frees the previous step's.
        self.kept.y_pred = Some(y_pred.clone());
        let loss = self.cross_entropy(&y_pred, y, &mut tape)?;
        drop(y_pred);
        self.kept.loss = Some(loss.clone());
        if let Some(factor) = factor {
            let label = self.config.strategy.loss_weighting.label();
            let divided = scaled(&loss, factor, Role::Forward, label)?;
            tape.push(Node::Scale { factor });
            drop(loss);
            self.kept.loss = Some(divided);
        } else {
            drop(loss);
        }
        // Leaving the autocast region frees the cast copies no node saved.
        drop(cache);
        self.pass = Pass::Backward;
        let root = self.kept.loss.clone().expect("the loss was just computed");
        let scaled_loss = self.scale_loss(&root, &mut tape)?;
        drop(root);
        let seed = Tensor::new(
            &self.device,
            1,
            1,
            DType::F32,
            Role::ActivationGradient,
            "loss.grad (ones_like)",
        )?;
        let recomputed = self.backward(tape, Seed::Ones(seed.clone()))?;
        drop((seed, scaled_loss));
        Ok(recomputed)
    }

    /// Adds the loss and the correct rows of the micro-batch `start..start + len` (whose
    /// `y_pred` the loop holds) to `totals`, when kernels ran.
    fn add_scores(
        &self,
        batch: Batch<'_>,
        start: u64,
        len: u64,
        totals: &mut Totals,
    ) -> Result<(), Error> {
        let (Batch::Data(split), Some(y_pred)) = (batch, &self.kept.y_pred) else {
            return Ok(());
        };
        if !self.device.info().executes {
            return Ok(());
        }
        let (loss, correct) = scores(y_pred, &split.y[start as usize..(start + len) as usize])?;
        totals.loss += loss;
        totals.correct += correct;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, micro_batches};
    use crate::alloc::Trace;
    use crate::data::Dataset;
    use crate::device::Device;
    use crate::mlp::{LossWeighting, Mlp, MlpConfig, Optimizer, Strategy};

    /// The lesson's network with a large SGD step (so that a wrong update shows), its batch
    /// accumulated over `k` micro-batches weighed by `loss_weighting`.
    fn config(k: u64, loss_weighting: LossWeighting) -> MlpConfig {
        MlpConfig::lesson(16)
            .with_optimizer(Optimizer::sgd(0.5))
            .with_strategy(Strategy {
                accumulation: k,
                loss_weighting,
                ..Strategy::default()
            })
    }

    /// Every parameter after one step on `rows` rows on the cpu backing, with its trace.
    fn one_step(rows: u64, config: &MlpConfig) -> (Vec<f32>, Trace) {
        let data = Dataset::generate(rows, 5).train;
        assert_eq!(data.len() as u64, rows);
        let dev = Device::cpu(1 << 30);
        let mut mlp = Mlp::new(&dev, config, 9).unwrap();
        dev.start_trace();
        mlp.train_step(Batch::Data(&data)).unwrap();
        let trace = dev.take_trace();
        (parameters(&mlp), trace)
    }

    fn parameters(mlp: &Mlp) -> Vec<f32> {
        mlp.layers()
            .iter()
            .flat_map(|l| l.tensors())
            .flat_map(|t| t.read::<f32>().unwrap())
            .collect()
    }

    fn largest_gap(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn micro_batches_cover_the_batch() {
        assert_eq!(micro_batches(10, 3), [(0, 4), (4, 3), (7, 3)]);
        assert_eq!(micro_batches(10, 1), [(0, 10)]);
        assert_eq!(micro_batches(2, 5), [(0, 1), (1, 1)]);
    }

    #[test]
    fn rows_weighting_sums_to_the_batch() {
        let factors: Vec<f64> = micro_batches(10, 3)
            .iter()
            .map(|&(_, len)| LossWeighting::ByRows.factor(10, 3, len))
            .collect();
        assert_eq!(factors, [0.4, 0.3, 0.3]);
        assert_eq!(LossWeighting::OverSteps.factor(10, 3, 4), 1.0 / 3.0);
    }

    /// 10 rows in 4 + 3 + 3: weighing each micro-batch by its rows gives the large batch's
    /// update to float32 rounding; `loss / k` does not (it does for 9 rows in 3 × 3).
    #[test]
    fn only_rows_weighting_gives_the_large_batch_update_for_an_uneven_split() {
        use LossWeighting::{ByRows, OverSteps};
        let (large, _) = one_step(10, &config(1, OverSteps));
        let start = parameters(&Mlp::new(&Device::cpu(1 << 30), &config(1, OverSteps), 9).unwrap());
        assert!(largest_gap(&large, &start) > 1e-2, "the update shows");
        let (by_rows, _) = one_step(10, &config(3, ByRows));
        let (over_steps, _) = one_step(10, &config(3, OverSteps));
        assert!(largest_gap(&large, &by_rows) < 1e-5);
        assert!(largest_gap(&large, &over_steps) > 1e-3);
        let (even_large, _) = one_step(9, &config(1, OverSteps));
        let (even, _) = one_step(9, &config(3, OverSteps));
        assert!(largest_gap(&even_large, &even) < 1e-5);
    }

    /// Both weightings make the same one-value tensor: the allocator sees the same requests
    /// (only the scaled loss's label differs).
    #[test]
    fn loss_weighting_changes_no_memory() {
        use LossWeighting::{ByRows, OverSteps};
        let (_, over_steps) = one_step(10, &config(3, OverSteps));
        let (_, mut by_rows) = one_step(10, &config(3, ByRows));
        let renamed = by_rows
            .events
            .iter_mut()
            .filter(|e| e.label == ByRows.label())
            .map(|e| e.label = OverSteps.label().to_string())
            .count();
        // Three allocations, and the frees of all but the last (the loop keeps it).
        assert_eq!(renamed, 5);
        assert_eq!(over_steps, by_rows);
    }
}
