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
use crate::ops;
use crate::role::Role;
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

/// A backward pass's time in units of its forward pass's: the bubble's model (backward does
/// about twice the forward's matrix products).
pub const BACKWARD_COST: u64 = 2;

/// The pipeline's bubble: the share of the step each card sits idle, from the schedule run in
/// unit times (a forward pass 1, a backward pass [`BACKWARD_COST`]; sends take no time) — a
/// model of the schedule, not a measurement. GPipe and 1F1B idle alike:
/// `(n − 1) / (m + n − 1)` for `n` stages and `m` micro-batches.
pub fn bubble(schedule: Schedule, stages: usize, micro_batches: usize) -> f64 {
    let (n, m) = (stages.max(1), micro_batches.max(1));
    let cost = |a: Action| match a {
        Action::Forward(_) => 1,
        Action::Backward(_) => BACKWARD_COST,
    };
    let mut queues: Vec<VecDeque<Action>> = (0..n).map(|s| actions(schedule, s, n, m)).collect();
    let mut free = vec![0u64; n];
    let mut forward_done = vec![vec![None; m]; n];
    let mut backward_done = vec![vec![None; m]; n];
    while queues.iter().any(|q| !q.is_empty()) {
        let waiting: usize = queues.iter().map(VecDeque::len).sum();
        for s in 0..n {
            let Some(&action) = queues[s].front() else {
                continue;
            };
            let after = match action {
                Action::Forward(mb) if s > 0 => forward_done[s - 1][mb],
                Action::Backward(mb) if s + 1 < n => backward_done[s + 1][mb],
                _ => Some(0),
            };
            let Some(after) = after else { continue };
            queues[s].pop_front();
            let end = free[s].max(after) + cost(action);
            free[s] = end;
            match action {
                Action::Forward(mb) => forward_done[s][mb] = Some(end),
                Action::Backward(mb) => backward_done[s][mb] = Some(end),
            }
        }
        if queues.iter().map(VecDeque::len).sum::<usize>() == waiting {
            // A schedule that waits on itself (none of the engine's does).
            return f64::NAN;
        }
    }
    let span = free.iter().copied().max().unwrap_or(0);
    let busy = m as u64 * (1 + BACKWARD_COST);
    1.0 - busy as f64 / span.max(1) as f64
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
    /// Micro-batches per step (`n_microbatches`); `None`: [`MICRO_BATCHES_PER_STAGE`] per
    /// stage.
    pub(crate) micro_batches: Option<u64>,
    /// The last stage's results of the last step, alive until the next.
    kept: Kept,
}

/// What the loop and the schedule keep of a step on the last stage: each micro-batch's loss
/// (the loop's `losses` list) with the activation it received (the loss's autograd graph
/// ends in that input's `AccumulateGrad`, which holds it), its logits (the schedule's output
/// chunks, cleared when the next step starts) and the logits merged into one tensor (what
/// `schedule.step` returned). The loop keeps `out` and `losses` until the next step's
/// `schedule.step` returns and they are rebound.
#[derive(Debug, Default)]
struct Kept {
    losses: Vec<(Tensor, Option<Tensor>)>,
    chunks: Vec<Tensor>,
    merged: Option<Tensor>,
}

/// One step in progress: the micro-batches, what crossed between cards, and each card's
/// micro-batches between their forward and backward passes (with their inputs, which the
/// schedule holds until the backward pass is over).
struct Step<'a> {
    comm: &'a Rc<RefCell<Comm>>,
    parts: Vec<(u64, u64)>,
    x: Tensor,
    y: Tensor,
    forward_in: Vec<Vec<Mailbox>>,
    backward_in: Vec<Vec<Mailbox>>,
    in_flight: Vec<Vec<Option<(StageForward, Tensor)>>>,
    /// Under 1F1B, each card's last input gradient sent back: its send is let go only when
    /// the card's next backward pass is over (or the step ends).
    sending: Vec<Option<Tensor>>,
    /// This step's losses on the last card (see [`Kept`]).
    losses: Vec<(Tensor, Option<Tensor>)>,
    schedule: Schedule,
    /// Each micro-batch's loss times its rows (kernels ran).
    loss_sum: f32,
    executes: bool,
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
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Pipeline {
            stages,
            schedule,
            micro_batches: None,
            kept: Kept::default(),
        })
    }

    /// One step on `batch`: the loss (kernels ran), or the card that failed and why.
    pub(crate) fn train_step(
        &mut self,
        batch: Batch<'_>,
        comm: &Rc<RefCell<Comm>>,
    ) -> Result<Option<f32>, (usize, Error)> {
        let n = self.stages.len();
        let rows = batch.rows();
        let m = self
            .micro_batches
            .unwrap_or(MICRO_BATCHES_PER_STAGE * n as u64);
        let parts = micro_batches(rows, m.min(rows));
        let m = parts.len();
        for (card, s) in self.stages.iter_mut().enumerate() {
            s.stage_zero_grad().map_err(|e| (card, e))?;
        }
        // The schedule clears its output chunks as the step starts.
        self.kept.chunks.clear();
        let (x, y) = self.upload(batch)?;
        let mut step = Step {
            comm,
            parts,
            x,
            y,
            forward_in: vec![vec![Mailbox::default(); m]; n],
            backward_in: vec![vec![Mailbox::default(); m]; n],
            in_flight: (0..n).map(|_| (0..m).map(|_| None).collect()).collect(),
            sending: vec![None; n],
            losses: Vec::new(),
            schedule: self.schedule,
            loss_sum: 0.0,
            executes: self.stages[0].device().info().executes,
        };
        let mut queues: Vec<VecDeque<Action>> =
            (0..n).map(|s| actions(self.schedule, s, n, m)).collect();
        while !queues.iter().all(VecDeque::is_empty) {
            let mut progressed = false;
            for (s, queue) in queues.iter_mut().enumerate() {
                while let Some(&action) = queue.front() {
                    if !step.ready(s, n, action) {
                        break;
                    }
                    queue.pop_front();
                    progressed = true;
                    match action {
                        Action::Forward(mb) => step.forward(self, s, mb),
                        Action::Backward(mb) => step.backward(&mut self.stages[s], s, mb),
                    }
                    .map_err(|e| (s, e))?;
                }
            }
            if !progressed {
                return Err((0, Error::Shape("the pipeline's schedule is stuck".into())));
            }
        }
        for (card, s) in self.stages.iter_mut().enumerate() {
            s.scale_grads(m as u64).map_err(|e| (card, e))?;
        }
        step.sending.clear();
        self.merge_outputs().map_err(|e| (n - 1, e))?;
        // The loop rebinds `losses`: last step's (and what their graphs hold) are let go.
        self.kept.losses = std::mem::take(&mut step.losses);
        for (card, s) in self.stages.iter_mut().enumerate() {
            s.stage_update().map_err(|e| (card, e))?;
        }
        let loss = step.executes.then(|| step.loss_sum / rows as f32);
        drop(step);
        Ok(loss)
    }

    /// The last stage's micro-batch logits merged into one tensor (`torch.cat`), which the
    /// loop keeps until the next step's replaces it.
    fn merge_outputs(&mut self) -> Result<(), Error> {
        let last = &self.stages[self.stages.len() - 1];
        let rows = self.kept.chunks.iter().map(Tensor::rows).sum::<u64>();
        let classes = last.config().classes;
        let merged = Tensor::new(
            last.device(),
            rows,
            classes,
            DType::F32,
            Role::Prediction,
            "y_pred (merged)",
        )?;
        let mut at = 0;
        for chunk in &self.kept.chunks {
            ops::copy(chunk, &merged.rows_view(at, chunk.rows())?)?;
            at += chunk.rows();
        }
        self.kept.merged = Some(merged);
        Ok(())
    }

    /// `x` on the first card and `y` on the last, as the loop makes them.
    fn upload(&self, batch: Batch<'_>) -> Result<(Tensor, Tensor), (usize, Error)> {
        let last = self.stages.len() - 1;
        let rows = batch.rows();
        let first = &self.stages[0];
        let inputs = first.config().inputs;
        let x = Tensor::new(first.device(), rows, inputs, DType::F32, Role::Input, "x")
            .map_err(|e| (0, e))?;
        let y = Tensor::new(
            self.stages[last].device(),
            rows,
            1,
            DType::I64,
            Role::Labels,
            "y",
        )
        .map_err(|e| (last, e))?;
        if let Batch::Data(split) = batch {
            x.write_f32(&split.x).map_err(|e| (0, e))?;
            let labels: Vec<i64> = split.y.iter().map(|&l| i64::from(l)).collect();
            y.write(&labels).map_err(|e| (last, e))?;
        }
        Ok((x, y))
    }
}

impl Step<'_> {
    /// Whether card `s` of `n` has what `action` needs.
    fn ready(&self, s: usize, n: usize, action: Action) -> bool {
        match action {
            Action::Forward(mb) => s == 0 || self.forward_in[s][mb].sent,
            Action::Backward(mb) => s == n - 1 || self.backward_in[s][mb].sent,
        }
    }

    /// Micro-batch `mb`'s forward pass on card `s`: its input (a slice of `x`, or the
    /// activation received), the stage, and its output sent on (or, on the last card, its
    /// loss and logits kept).
    fn forward(&mut self, p: &mut Pipeline, s: usize, mb: usize) -> Result<(), Error> {
        let (start, len) = self.parts[mb];
        let last = s + 1 == p.stages.len();
        let stage = &mut p.stages[s];
        let input = match s {
            0 => self.x.rows_view(start, len)?,
            _ => received(
                stage,
                len,
                &self.forward_in[s][mb],
                Role::Forward,
                "activation (received)",
            )?,
        };
        let labels = last.then(|| self.y.rows_view(start, len)).transpose()?;
        let mut out = stage.stage_forward(&input, labels.as_ref())?;
        drop(labels);
        if last {
            if self.executes {
                self.loss_sum += out.output.read::<f32>()?[0] * len as f32;
            }
            let received = (s > 0).then(|| input.clone());
            self.losses.push((out.output.clone(), received));
            p.kept.chunks.extend(out.logits.take());
        } else {
            self.comm
                .borrow_mut()
                .point_to_point(s, s + 1, out.output.bytes());
            self.forward_in[s + 1][mb] = sent(&out.output, self.executes)?;
        }
        self.in_flight[s][mb] = Some((out, input));
        Ok(())
    }

    /// Micro-batch `mb`'s backward pass on card `s` (from its loss on the last card, else
    /// from the gradient received), its input's gradient sent back.
    fn backward(&mut self, stage: &mut Mlp, s: usize, mb: usize) -> Result<(), Error> {
        let (_, len) = self.parts[mb];
        let Some((forward, input)) = self.in_flight[s][mb].take() else {
            let why = format!("stage {s}: backward of micro-batch {mb} before its forward");
            return Err(Error::Shape(why));
        };
        let grad = match self.backward_in[s].get(mb).filter(|m| m.sent) {
            Some(mail) => Some(received(
                stage,
                len,
                mail,
                Role::ActivationGradient,
                "gradient (received)",
            )?),
            None => None,
        };
        let input_grad = stage.stage_backward(forward, grad)?;
        if let (Some(g), true) = (&input_grad, s > 0) {
            self.comm.borrow_mut().point_to_point(s, s - 1, g.bytes());
            self.backward_in[s - 1][mb] = sent(g, self.executes)?;
        }
        drop(input);
        if self.schedule == Schedule::OneFOneB {
            // The previous backward's send is let go now; this one's at the next.
            self.sending[s] = input_grad;
        }
        Ok(())
    }
}

/// The receive buffer of a tensor sent to `stage`: `rows × width`, filled with what was sent.
fn received(
    stage: &Mlp,
    rows: u64,
    mail: &Mailbox,
    role: Role,
    label: &str,
) -> Result<Tensor, Error> {
    let width = stage.config().hidden;
    let t = Tensor::new(stage.device(), rows, width, DType::F32, role, label)?;
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
