//! One pipeline stage's share of the step: the forward and backward pass of one
//! micro-batch through this network's layers (a contiguous run of the whole network's), with
//! the loss on the last stage, as `torch.distributed.pipelining`'s `PipelineStage` runs them.
//! The schedule (GPipe, 1F1B) that orders them lives a floor above, in `parallel`.

use super::autograd::Tape;
use super::backward::Seed;
use super::{Mlp, Pass};
use crate::error::Error;
use crate::ops;
use crate::role::Role;
use crate::tensor::{DType, Tensor};

/// One micro-batch's forward pass on a stage, kept for its backward pass.
#[derive(Debug)]
pub(crate) struct StageForward {
    pub(crate) tape: Tape,
    /// The activation sent to the next stage, or on the last stage the micro-batch's loss.
    pub(crate) output: Tensor,
    /// The last stage's logits for this micro-batch: the schedule keeps each micro-batch's
    /// output until its next step, to return them.
    pub(crate) logits: Option<Tensor>,
}

impl Mlp {
    /// Whether this stage ends in the network's output layer (and so computes the loss).
    pub(crate) fn is_last_stage(&self) -> bool {
        self.is_output(self.layers.len() - 1)
    }

    /// The forward pass of one micro-batch from `input` through this stage's layers; on the
    /// last stage `labels` give the loss (`cross_entropy`, mean over the micro-batch).
    pub(crate) fn stage_forward(
        &mut self,
        input: &Tensor,
        labels: Option<&Tensor>,
    ) -> Result<StageForward, Error> {
        self.pass = Pass::Forward;
        let mut tape = Tape::default();
        let mut cache = None;
        let mut h = input.clone();
        for j in 0..self.layers.len() {
            let z = self.linear(j, &h, Some(&mut tape), &mut cache)?;
            h = if self.is_output(j) {
                z
            } else {
                self.relu(j, z, Some(&mut tape))?
            };
        }
        match labels {
            Some(y) if self.is_last_stage() => {
                let loss = self.cross_entropy(&h, y, &mut tape)?;
                Ok(StageForward {
                    tape,
                    output: loss,
                    logits: Some(h),
                })
            }
            _ => Ok(StageForward {
                tape,
                output: h,
                logits: None,
            }),
        }
    }

    /// The backward pass of one micro-batch: from its loss (last stage) or from `grad`, the
    /// gradient the next stage sent. Returns the gradient of the stage's input, if the stage
    /// has a stage before it.
    pub(crate) fn stage_backward(
        &mut self,
        forward: StageForward,
        grad: Option<Tensor>,
    ) -> Result<Option<Tensor>, Error> {
        self.pass = Pass::Backward;
        let StageForward { tape, output, .. } = forward;
        let seed = match grad {
            Some(g) => Seed::Received(g),
            None => Seed::Ones(Tensor::new(
                &self.device,
                1,
                1,
                DType::F32,
                Role::ActivationGradient,
                "loss.grad (ones_like)",
            )?),
        };
        drop(output);
        // The schedule holds the received gradient (or the seed) until the micro-batch's
        // backward pass is over.
        let held = match &seed {
            Seed::Ones(t) | Seed::Received(t) => t.clone(),
        };
        let (_, input_grad) = self.backward_to_input(tape, seed)?;
        drop(held);
        Ok(input_grad)
    }

    /// `zero_grad()` on this stage.
    pub(crate) fn stage_zero_grad(&mut self) -> Result<(), Error> {
        self.pass = Pass::Optimizer;
        self.zero_grad()
    }

    /// `scale_grads`: every gradient divided by the micro-batches, in place.
    pub(crate) fn scale_grads(&mut self, micro_batches: u64) -> Result<(), Error> {
        for g in &self.grads {
            for t in [&g.weight, &g.bias].into_iter().flatten() {
                ops::scale(t, 1.0 / micro_batches as f32)?;
            }
        }
        Ok(())
    }

    /// `optimizer.step()` on this stage.
    pub(crate) fn stage_update(&mut self) -> Result<(), Error> {
        self.pass = Pass::Optimizer;
        self.optimizer_step().map(|_| ())
    }
}
