//! Evaluation: the forward pass under `torch.no_grad()` (nothing saved), the loss and the
//! accuracy.

use super::Mlp;
use super::autograd::Tape;
use super::step::Batch;
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
            drop(tape);
            if self.device.info().executes {
                loss += l.read_f64()?[0] * x.rows() as f64;
                correct += count_correct(&y_pred, &part.y)?;
            }
        }
        let n = split.len().max(1) as f64;
        Ok(((loss / n) as f32, (correct as f64 / n) as f32))
    }
}

/// Rows of `y_pred` whose largest logit is the label, counted on the host from a read-back
/// (no device memory: PyTorch's loop would count on the device, with tensors of its own).
pub(super) fn count_correct(y_pred: &Tensor, labels: &[u32]) -> Result<u64, Error> {
    let c = y_pred.cols() as usize;
    Ok(y_pred
        .read_f64()?
        .chunks_exact(c)
        .zip(labels)
        .filter(|(row, l)| {
            let best = row
                .iter()
                .enumerate()
                .fold(0, |b, (j, &v)| if v > row[b] { j } else { b });
            best == **l as usize
        })
        .count() as u64)
}
