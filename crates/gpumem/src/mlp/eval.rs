//! Evaluation: the forward pass under `torch.no_grad()` (nothing saved), the loss and the
//! accuracy.

use super::Mlp;
use super::autograd::Tape;
use super::batch::Batch;
use crate::data::Split;
use crate::error::Error;
use crate::tensor::Tensor;

impl Mlp {
    /// The logits (`rows × classes`, row-major) for the rows of `split`: the forward pass
    /// under `torch.no_grad()` (nothing saved).
    pub fn forward(&self, split: &Split) -> Result<Vec<f32>, Error> {
        let (x, _y) = self.upload(Batch::Data(split))?;
        let y_pred = self.predict(&x)?;
        Ok(y_pred.read_f64()?.into_iter().map(|v| v as f32).collect())
    }

    /// `model(x)` under `torch.no_grad()`: each layer's input is let go once its product
    /// exists.
    fn predict(&self, x: &Tensor) -> Result<Tensor, Error> {
        let mut cache = self.autocast_region();
        let mut h = x.clone();
        for i in 0..self.config.layers as usize {
            let z = self.linear(i, &h, None, &mut cache)?;
            drop(h);
            h = self.relu(i, z, None)?;
        }
        self.linear(self.config.layers as usize, &h, None, &mut cache)
    }

    /// Mean loss and accuracy over `split`, in batches of `batch` rows (forward only).
    pub fn evaluate(&self, split: &Split, batch: u64) -> Result<(f32, f32), Error> {
        let mut loss = 0.0f64;
        let mut correct = 0u64;
        let indices: Vec<usize> = (0..split.len()).collect();
        for chunk in indices.chunks(batch.max(1) as usize) {
            let part = split.gather(chunk);
            let (x, y) = self.upload(Batch::Data(&part))?;
            let y_pred = self.predict(&x)?;
            let mut tape = Tape::default();
            let l = self.cross_entropy(&y_pred, &y, &mut tape)?;
            drop((tape, l));
            if self.device.info().executes {
                let (sum, right) = scores(&y_pred, &part.y)?;
                loss += sum;
                correct += right;
            }
        }
        let n = split.len().max(1) as f64;
        Ok(((loss / n) as f32, (correct as f64 / n) as f32))
    }
}

/// The summed cross-entropy of `y_pred`'s rows against `labels` and the rows whose largest
/// logit is the label, from one read-back of `y_pred` (computed in float64 on the host, so no
/// device memory is used and the device is waited for once; PyTorch's loop reads
/// `loss.item()` and would count on the device).
pub(super) fn scores(y_pred: &Tensor, labels: &[u32]) -> Result<(f64, u64), Error> {
    let c = y_pred.cols() as usize;
    let values = y_pred.read_f64()?;
    let (mut loss, mut correct) = (0.0, 0);
    for (row, &label) in values.chunks_exact(c).zip(labels) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log_sum = row.iter().map(|v| (v - max).exp()).sum::<f64>().ln() + max;
        loss += log_sum - row.get(label as usize).copied().unwrap_or(f64::NAN);
        let best = row
            .iter()
            .enumerate()
            .fold(0, |b, (j, &v)| if v > row[b] { j } else { b });
        correct += u64::from(best == label as usize);
    }
    Ok((loss, correct))
}
