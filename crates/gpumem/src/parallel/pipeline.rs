//! Pipeline parallelism as `torch.distributed.pipelining` runs it: the network's layers split
//! into contiguous stages, one per card; the batch into micro-batches that flow through the
//! stages; each stage keeps the activations of the micro-batches it has run forward and not
//! yet backward. GPipe runs every micro-batch forward, then every one backward, so each stage
//! holds them all; 1F1B (`Schedule1F1B`) starts backward passes as soon as it can, so stage
//! `s` of `n` holds at most `n − s`. After the last backward pass, `scale_grads` divides the
//! summed gradients by the micro-batches, and each stage's optimizer updates its layers.
//!
//! The cards run one after another, each taking its next action as soon as what it needs has
//! been sent to it: each card's actions, and so its memory, come in its schedule's order.

use super::comm::Comm;
use crate::device::Device;
use crate::error::Error;
use crate::mlp::{Batch, Mlp, MlpConfig, StageForward, micro_batches};
use crate::tensor::{DType, Tensor};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// The order a stage runs its micro-batches in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Schedule {
    /// `ScheduleGPipe`: every forward pass, then every backward pass.
    GPipe,
    /// `Schedule1F1B`: `n − s` forward passes, then one backward and one forward in turn.
    OneFOneB,
}

/// Micro-batches per stage: the schedule runs `2 × stages` micro-batches (a choice, said
/// where it is shown).
pub const MICRO_BATCHES_PER_STAGE: u64 = 2;

/// One action of a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Forward(usize),
    Backward(usize),
}

/// The actions stage `stage` of `stages` runs, in order, for `m` micro-batches.
fn actions(schedule: Schedule, stage: usize, stages: usize, m: usize) -> VecDeque<Action> {
    let forwards = (0..m).map(Action::Forward);
    let backwards = (0..m).map(Action::Backward);
    match schedule {
        Schedule::GPipe => forwards.chain(backwards).collect(),
        Schedule::OneFOneB => {
            let warmup = m.min(stages - stage);
            let mut out: VecDeque<Action> = (0..warmup).map(Action::Forward).collect();
            for b in 0..m {
                out.push_back(Action::Backward(b));
                if warmup + b < m {
                    out.push_back(Action::Forward(warmup + b));
                }
            }
            out
        }
    }
}

/// What crosses between cards: per micro-batch, the activation a stage sends forward and the
/// gradient it sends back (their values when kernels run).
#[derive(Debug, Default, Clone)]
struct Mailbox {
    sent: bool,
    values: Option<Vec<f32>>,
}

/// The layers of each of `stages` stages: contiguous, as even as possible (the first stages
/// one layer more).
pub fn stage_layers(
    config: &MlpConfig,
    stages: usize,
) -> Result<Vec<std::ops::Range<usize>>, Error> {
    let layers = config.layers as usize + 1;
    if stages > layers {
        return Err(Error::Setup(format!(
            "a pipeline of {stages} cards needs at least {stages} layers to give each card one; \
             this network has {layers} (its {} hidden layers and the output layer)",
            config.layers
        )));
    }
    Ok(micro_batches(layers as u64, stages as u64)
        .into_iter()
        .map(|(start, len)| start as usize..(start + len) as usize)
        .collect())
}

/// The stages of a pipeline, one per card.
#[derive(Debug)]
pub(crate) struct Pipeline {
    pub(crate) stages: Vec<Mlp>,
    schedule: Schedule,
}

impl Pipeline {
    /// `config` split over `devices`, each stage initialised as the whole network would be.
    pub(crate) fn new(
        devices: &[Device],
        config: &MlpConfig,
        schedule: Schedule,
        seed: u64,
    ) -> Result<Pipeline, Vec<(usize, Error)>> {
        let ranges = stage_layers(config, devices.len()).map_err(|e| vec![(0, e)])?;
        let mut stages = Vec::new();
        let mut errors = Vec::new();
        for (card, (device, range)) in devices.iter().zip(ranges).enumerate() {
            match Mlp::stage(device, config, seed, range) {
                Ok(m) => stages.push(m),
                Err(e) => errors.push((card, e)),
            }
        }
        if errors.is_empty() {
            Ok(Pipeline { stages, schedule })
        } else {
            Err(errors)
        }
    }

    /// One step on `batch`: returns each stage's failure, if any, and the loss (kernels ran).
    pub(crate) fn train_step(
        &mut self,
        batch: Batch<'_>,
        comm: &Rc<RefCell<Comm>>,
    ) -> Result<Option<f32>, (usize, Error)> {
        let n = self.stages.len();
        let rows = batch.rows();
        let m = (MICRO_BATCHES_PER_STAGE * n as u64).min(rows);
        let parts = micro_batches(rows, m);
        let m = parts.len();
        for (card, s) in self.stages.iter_mut().enumerate() {
            s.stage_zero_grad().map_err(|e| (card, e))?;
        }
        let (x, y) = self.upload(batch)?;
        let mut queues: Vec<VecDeque<Action>> =
            (0..n).map(|s| actions(self.schedule, s, n, m)).collect();
        let mut forward_in = vec![vec![Mailbox::default(); m]; n];
        let mut backward_in = vec![vec![Mailbox::default(); m]; n];
        let mut kept: Vec<Vec<Option<StageForward>>> =
            (0..n).map(|_| (0..m).map(|_| None).collect()).collect();
        let mut losses = Vec::new();
        let executes = self.stages[0].device().info().executes;
        loop {
            let mut progressed = false;
            for s in 0..n {
                while let Some(&action) = queues[s].front() {
                    let ready = match action {
                        Action::Forward(mb) => s == 0 || forward_in[s][mb].sent,
                        Action::Backward(mb) => s == n - 1 || backward_in[s][mb].sent,
                    };
                    if !ready {
                        break;
                    }
                    queues[s].pop_front();
                    progressed = true;
                    let (start, len) = parts_of(&parts, action);
                    let stage = &mut self.stages[s];
                    let fail = |e| (s, e);
                    match action {
                        Action::Forward(mb) => {
                            let input = if s == 0 {
                                x.rows_view(start, len).map_err(fail)?
                            } else {
                                received(stage, len, &forward_in[s][mb], "activation (received)")
                                    .map_err(fail)?
                            };
                            let labels = if s == n - 1 {
                                Some(y.rows_view(start, len).map_err(fail)?)
                            } else {
                                None
                            };
                            let out = stage.stage_forward(&input, labels.as_ref()).map_err(fail)?;
                            drop((input, labels));
                            if s + 1 < n {
                                comm.borrow_mut()
                                    .point_to_point(s, s + 1, out.output.bytes());
                                forward_in[s + 1][mb] =
                                    sent(&out.output, executes).map_err(fail)?;
                            } else if executes {
                                losses
                                    .push(out.output.read::<f32>().map_err(fail)?[0] * len as f32);
                            }
                            kept[s][mb] = Some(out);
                        }
                        Action::Backward(mb) => {
                            let Some(forward) = kept[s][mb].take() else {
                                return Err((
                                    s,
                                    Error::Shape(format!(
                                        "stage {s}: backward of micro-batch {mb} before its forward"
                                    )),
                                ));
                            };
                            let grad = if s + 1 < n {
                                Some(
                                    received(
                                        stage,
                                        len,
                                        &backward_in[s][mb],
                                        "gradient (received)",
                                    )
                                    .map_err(fail)?,
                                )
                            } else {
                                None
                            };
                            let input_grad = stage.stage_backward(forward, grad).map_err(fail)?;
                            if let (Some(g), true) = (&input_grad, s > 0) {
                                comm.borrow_mut().point_to_point(s, s - 1, g.bytes());
                                backward_in[s - 1][mb] = sent(g, executes).map_err(fail)?;
                            }
                        }
                    }
                }
            }
            if queues.iter().all(VecDeque::is_empty) {
                break;
            }
            if !progressed {
                return Err((0, Error::Shape("the pipeline's schedule is stuck".into())));
            }
        }
        for (card, s) in self.stages.iter_mut().enumerate() {
            s.scale_grads(m as u64).map_err(|e| (card, e))?;
            s.stage_update().map_err(|e| (card, e))?;
        }
        drop((x, y));
        Ok(executes.then(|| losses.iter().sum::<f32>() / rows as f32))
    }

    /// `x` on the first card and `y` on the last, as the loop makes them.
    fn upload(&self, batch: Batch<'_>) -> Result<(Tensor, Tensor), (usize, Error)> {
        let last = self.stages.len() - 1;
        let rows = batch.rows();
        let first = &self.stages[0];
        let inputs = first.config().inputs;
        let x = Tensor::new(first.device(), rows, inputs, DType::F32, "x").map_err(|e| (0, e))?;
        let y = Tensor::new(self.stages[last].device(), rows, 1, DType::I64, "y")
            .map_err(|e| (last, e))?;
        if let Batch::Data(split) = batch {
            x.write_f32(&split.x).map_err(|e| (0, e))?;
            let labels: Vec<i64> = split.y.iter().map(|&l| i64::from(l)).collect();
            y.write(&labels).map_err(|e| (last, e))?;
        }
        Ok((x, y))
    }
}

fn parts_of(parts: &[(u64, u64)], action: Action) -> (u64, u64) {
    match action {
        Action::Forward(mb) | Action::Backward(mb) => parts[mb],
    }
}

/// The receive buffer of a tensor sent to `stage`: `rows × width`, filled with what was sent.
fn received(stage: &Mlp, rows: u64, mail: &Mailbox, label: &str) -> Result<Tensor, Error> {
    let width = stage.config().hidden;
    let t = Tensor::new(stage.device(), rows, width, DType::F32, label)?;
    if let Some(v) = &mail.values {
        t.write_f32(v)?;
    }
    Ok(t)
}

/// What a send carries.
fn sent(t: &Tensor, executes: bool) -> Result<Mailbox, Error> {
    Ok(Mailbox {
        sent: true,
        values: if executes {
            Some(t.read::<f32>()?)
        } else {
            None
        },
    })
}
