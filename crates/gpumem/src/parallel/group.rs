//! A group of cards training one network under a [`Scheme`]: each card its own device and
//! copy of the step, the collectives between the phases of the step.

use super::comm::{Comm, CommBytes};
use super::ddp::{Ddp, param_shapes};
use super::fsdp::{Exchange, Fsdp, unpadded};
use super::pipeline::Pipeline;
use super::scheme::Scheme;
use super::zero1;
use crate::alloc::OutOfMemory;
use crate::data::Split;
use crate::device::Device;
use crate::error::Error;
use crate::mlp::{Batch, Mlp, MlpConfig, Pass, StepResult, micro_batches};
use std::cell::RefCell;
use std::rc::Rc;

/// What a scheme keeps on one card besides the network.
#[derive(Debug)]
enum Wrapper {
    Ddp(Rc<RefCell<Ddp>>),
    Fsdp(Rc<RefCell<Fsdp>>),
}

#[derive(Debug)]
struct Card {
    mlp: Mlp,
    wrapper: Wrapper,
}

/// A card that ran out of memory, where, and how far into the step it got.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CardFailure {
    pub card: usize,
    pub pass: Pass,
    pub oom: OutOfMemory,
    /// Allocations the card made in the step before it failed: in lockstep the card with
    /// the fewest fails first.
    pub allocations: u64,
}

/// One step of the whole group.
#[derive(Debug, Clone)]
pub struct GroupStep {
    /// Each card's own step (its rows, its loss).
    pub cards: Vec<StepResult>,
    /// The loss over the whole batch (kernels ran).
    pub loss: Option<f32>,
}

/// Cards training one network together.
#[derive(Debug)]
pub struct Group {
    scheme: Scheme,
    cards: Vec<Card>,
    comm: Rc<RefCell<Comm>>,
    exchange: Rc<RefCell<Exchange>>,
    /// ZeRO-1: the card that updates each parameter.
    owners: Option<Vec<usize>>,
    /// The pipeline schemes' stages (then `cards` is empty).
    pipeline: Option<Pipeline>,
}

/// The group's first error: an out-of-memory (the card that failed first) or another.
fn first_error(errors: Vec<(usize, Error, Pass, u64)>) -> Option<(Error, Vec<CardFailure>)> {
    let failures: Vec<CardFailure> = errors
        .iter()
        .filter_map(|(card, e, pass, allocations)| match e {
            Error::OutOfMemory(o) => Some(CardFailure {
                card: *card,
                pass: *pass,
                oom: (**o).clone(),
                allocations: *allocations,
            }),
            _ => None,
        })
        .collect();
    let first = errors.into_iter().min_by_key(|(card, e, _, allocations)| {
        (matches!(e, Error::OutOfMemory(_)), *allocations, *card)
    })?;
    Some((first.1, failures))
}

impl Group {
    /// `config` on every device of `devices` (card `i` is `devices[i]`) under `scheme`, each
    /// card's network initialised alike from `seed` (DDP's broadcast from card 0).
    pub fn new(
        devices: &[Device],
        config: &MlpConfig,
        scheme: Scheme,
        seed: u64,
    ) -> Result<Group, (Error, Vec<CardFailure>)> {
        let n = devices.len();
        if n == 0 {
            return Err((
                Error::Setup("a group needs at least one card".into()),
                Vec::new(),
            ));
        }
        let comm = Rc::new(RefCell::new(Comm::new(n)));
        let exchange = Rc::new(RefCell::new(Exchange::default()));
        let mut group = Group {
            scheme,
            cards: Vec::with_capacity(n),
            comm,
            exchange,
            owners: None,
            pipeline: None,
        };
        devices
            .iter()
            .enumerate()
            .for_each(|(card, d)| d.set_index(card));
        if let Some(schedule) = scheme.pipeline() {
            let plain = crate::mlp::Strategy::default();
            let st = &config.strategy;
            if (st.precision, st.accumulation, st.checkpointing)
                != (plain.precision, plain.accumulation, plain.checkpointing)
            {
                let why = "the pipeline schemes run the plain step (float32, no accumulation or \
                           checkpointing)";
                return Err((Error::Setup(why.into()), Vec::new()));
            }
            return match Pipeline::new(devices, config, schedule, seed) {
                Ok(p) => {
                    group.pipeline = Some(p);
                    Ok(group)
                }
                Err(errors) => {
                    let errors = errors.into_iter().map(|(c, e)| (c, e, Pass::Model, 0));
                    Err(first_error(errors.collect()).expect("a failed pipeline has an error"))
                }
            };
        }
        let mut errors = Vec::new();
        for (card, device) in devices.iter().enumerate() {
            match group.add_card(device, config, seed, card, n) {
                Ok(c) => group.cards.push(c),
                Err(e) => errors.push((card, e, Pass::Model, 0)),
            }
        }
        if let Some(e) = first_error(errors) {
            return Err(e);
        }
        if let Wrapper::Ddp(d) = &group.cards[0].wrapper {
            group
                .comm
                .borrow_mut()
                .broadcast(0, d.borrow().parameter_bytes());
        }
        group
            .share_whole_parameters()
            .map_err(|e| (e, Vec::new()))?;
        Ok(group)
    }

    fn add_card(
        &mut self,
        device: &Device,
        config: &MlpConfig,
        seed: u64,
        card: usize,
        n: usize,
    ) -> Result<Card, Error> {
        let mut mlp = Mlp::new(device, config, seed)?;
        if self.scheme.shards_parameters() && card == 0 && device.info().executes {
            self.exchange.borrow_mut().whole = mlp
                .layers()
                .iter()
                .map(|l| Ok((l.weight.read::<f32>()?, l.bias.read::<f32>()?)))
                .collect::<Result<_, Error>>()?;
        }
        let wrapper = match self.scheme {
            Scheme::Ddp | Scheme::DdpBucketView => {
                let ddp = Ddp::new(&mlp, self.scheme == Scheme::DdpBucketView, None)?;
                Wrapper::Ddp(Rc::new(RefCell::new(ddp)))
            }
            Scheme::Zero1 => {
                let sizes: Vec<u64> = param_shapes(&mlp).iter().map(|(r, c)| r * c).collect();
                let owners = self
                    .owners
                    .get_or_insert_with(|| zero1::partition(&sizes, n));
                let owned = owners.iter().map(|&o| o == card).collect();
                Wrapper::Ddp(Rc::new(RefCell::new(Ddp::new(&mlp, true, Some(owned))?)))
            }
            Scheme::PipelineGpipe | Scheme::Pipeline1f1b => {
                return Err(Error::Setup(
                    "a pipeline's stages are not data-parallel cards".into(),
                ));
            }
            Scheme::Zero2 | Scheme::Zero3 => {
                let reshard = self.scheme == Scheme::Zero3;
                let fsdp = Fsdp::shard(
                    &mut mlp,
                    card,
                    n as u64,
                    reshard,
                    self.comm.clone(),
                    self.exchange.clone(),
                )?;
                Wrapper::Fsdp(Rc::new(RefCell::new(fsdp)))
            }
        };
        match &wrapper {
            Wrapper::Ddp(h) => mlp.set_hooks(h.clone()),
            Wrapper::Fsdp(h) => mlp.set_hooks(h.clone()),
        }
        Ok(Card { mlp, wrapper })
    }

    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// A pipeline's micro-batches per step (`n_microbatches`; by default
    /// [`super::MICRO_BATCHES_PER_STAGE`] per stage). The other schemes have none to set.
    pub fn set_micro_batches(&mut self, micro_batches: u64) -> Result<(), Error> {
        match (&mut self.pipeline, micro_batches) {
            (_, 0) => Err(Error::Setup(
                "a pipeline needs at least one micro-batch".into(),
            )),
            (Some(p), m) => {
                p.micro_batches = Some(m);
                Ok(())
            }
            (None, _) => Err(Error::Setup(format!(
                "{} splits the batch over cards, not into a pipeline's micro-batches",
                self.scheme
            ))),
        }
    }

    pub fn len(&self) -> usize {
        self.pipeline
            .as_ref()
            .map_or(self.cards.len(), |p| p.stages.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Card `i`'s device.
    pub fn device(&self, i: usize) -> &Device {
        self.network(i).device()
    }

    /// Card `i`'s network (under ZeRO-2/3 its layers hold this card's shards; in a pipeline,
    /// its stage's layers).
    pub fn network(&self, i: usize) -> &Mlp {
        match &self.pipeline {
            Some(p) => &p.stages[i],
            None => &self.cards[i].mlp,
        }
    }

    /// The whole network's parameters after the last step, in `model.parameters()` order
    /// (kernels ran): card 0's under DDP and ZeRO-1 (every card holds the same), gathered
    /// from the shards under ZeRO-2/3.
    pub fn parameters(&self) -> Result<Vec<f32>, Error> {
        if self.scheme.shards_parameters() {
            let ex = self.exchange.borrow();
            return Ok(ex
                .whole
                .iter()
                .flat_map(|(w, b)| w.iter().chain(b).copied())
                .collect());
        }
        let holders: Vec<&Mlp> = match &self.pipeline {
            Some(p) => p.stages.iter().collect(),
            None => vec![&self.cards[0].mlp],
        };
        let mut out = Vec::new();
        for l in holders.iter().flat_map(|m| m.layers()) {
            out.extend(l.weight.read::<f32>()?);
            out.extend(l.bias.read::<f32>()?);
        }
        Ok(out)
    }

    /// Bytes each card sent and received so far.
    pub fn comm_bytes(&self) -> Vec<CommBytes> {
        self.comm.borrow().bytes().to_vec()
    }

    /// The rows of `rows` each card takes: contiguous, as equal as possible (the first
    /// cards one row more).
    pub fn split_rows(&self, rows: u64) -> Result<Vec<(u64, u64)>, Error> {
        let n = self.len() as u64;
        if rows < n {
            return Err(Error::Setup(format!(
                "a batch of {rows} rows cannot give each of {n} cards a row"
            )));
        }
        Ok(micro_batches(rows, n))
    }

    /// One training step of the group on `batch`: every card's forward and backward pass on
    /// its rows, the gradients reduced, every card's update. An out-of-memory error is the
    /// card that ran out first (all that ran out are in the second value).
    pub fn train_step(&mut self, batch: Batch<'_>) -> Result<GroupStep, (Error, Vec<CardFailure>)> {
        if let Some(p) = &mut self.pipeline {
            return pipeline_step(p, batch, &self.comm);
        }
        let parts = self.split_rows(batch.rows()).map_err(|e| (e, Vec::new()))?;
        let splits: Vec<Option<Split>> = parts
            .iter()
            .map(|&(start, len)| match batch {
                Batch::Data(s) => {
                    Some(s.gather(&(start as usize..(start + len) as usize).collect::<Vec<_>>()))
                }
                Batch::Planned(_) => None,
            })
            .collect();
        let part_batch = |i: usize| match &splits[i] {
            Some(s) => Batch::Data(s),
            None => Batch::Planned(parts[i].1),
        };
        let layers = self.cards[0].mlp.layers().len();
        self.exchange.borrow_mut().sums = vec![Vec::new(); layers];
        let mut pending = Vec::with_capacity(self.cards.len());
        let mut errors = Vec::new();
        for (i, card) in self.cards.iter_mut().enumerate() {
            let start = allocations(card.mlp.device());
            match card.mlp.forward_backward(part_batch(i)) {
                Ok(p) => pending.push(Some(p)),
                Err(e) => {
                    errors.push((
                        i,
                        e,
                        card.mlp.pass(),
                        allocations(card.mlp.device()) - start,
                    ));
                    pending.push(None);
                }
            }
        }
        if let Some(e) = first_error(errors) {
            return Err(e);
        }
        self.reduce_gradients().map_err(|e| (e, Vec::new()))?;
        let mut results = Vec::with_capacity(self.cards.len());
        let mut errors = Vec::new();
        for (i, (card, p)) in self.cards.iter_mut().zip(pending).enumerate() {
            let Some(p) = p else { continue };
            let start = allocations(card.mlp.device());
            match card.mlp.finish_step(part_batch(i), p) {
                Ok(r) => results.push(r),
                Err(e) => errors.push((
                    i,
                    e,
                    Pass::Optimizer,
                    allocations(card.mlp.device()) - start,
                )),
            }
        }
        if let Some(e) = first_error(errors) {
            return Err(e);
        }
        self.after_update().map_err(|e| (e, Vec::new()))?;
        let loss = results
            .iter()
            .map(|r| r.loss.map(|l| f64::from(l) * r.rows as f64))
            .sum::<Option<f64>>()
            .map(|s| (s / batch.rows() as f64) as f32);
        Ok(GroupStep {
            cards: results,
            loss,
        })
    }

    /// Between backward and the update: DDP's all-reduce of its buckets (and the copy back
    /// into `.grad` without bucket views); FSDP's reduce-scatter results written.
    fn reduce_gradients(&mut self) -> Result<(), Error> {
        let n = self.cards.len();
        match &self.cards[0].wrapper {
            Wrapper::Ddp(first) => {
                let buckets = first.borrow().buckets().len();
                for b in 0..buckets {
                    let tensors: Vec<_> = self
                        .cards
                        .iter()
                        .filter_map(|c| match &c.wrapper {
                            Wrapper::Ddp(d) => Some(d.borrow().buckets()[b].tensor.clone()),
                            Wrapper::Fsdp(_) => None,
                        })
                        .collect();
                    let bytes = tensors[0].bytes();
                    for card in 0..n {
                        self.comm.borrow_mut().all_reduce(card, bytes);
                    }
                    if self.cards[0].mlp.device().info().executes {
                        let mut sum = vec![0.0f32; tensors[0].len() as usize];
                        for t in &tensors {
                            sum.iter_mut()
                                .zip(t.read::<f32>()?)
                                .for_each(|(a, v)| *a += v);
                        }
                        sum.iter_mut().for_each(|v| *v /= n as f32);
                        for t in &tensors {
                            t.write_f32(&sum)?;
                        }
                    }
                }
                if self.cards[0].mlp.device().info().executes {
                    for c in &self.cards {
                        if let Wrapper::Ddp(d) = &c.wrapper {
                            d.borrow().copy_back(c.mlp.gradients())?;
                        }
                    }
                }
            }
            Wrapper::Fsdp(_) => {
                if self.cards[0].mlp.device().info().executes {
                    for c in &mut self.cards {
                        if let Wrapper::Fsdp(f) = &c.wrapper {
                            let f = f.clone();
                            f.borrow().write_reduced(&mut c.mlp)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// After the update: ZeRO-1's broadcast of each parameter from the card that updated it;
    /// FSDP's whole parameters (for the next all-gathers) assembled from the cards' shards.
    fn after_update(&mut self) -> Result<(), Error> {
        let executes = self.cards[0].mlp.device().info().executes;
        if let Some(owners) = &self.owners {
            for (index, &owner) in owners.iter().enumerate() {
                // `model.parameters()` order: layer `index / 2`, its bias when odd.
                let (layer, bias) = (index / 2, index % 2 == 1);
                let pick = |c: &Card| {
                    let l = &c.mlp.layers()[layer];
                    if bias {
                        l.bias.clone()
                    } else {
                        l.weight.clone()
                    }
                };
                let source = pick(&self.cards[owner]);
                self.comm.borrow_mut().broadcast(owner, source.bytes());
                if executes {
                    let values = source.read::<f32>()?;
                    for (card, c) in self.cards.iter().enumerate() {
                        if card != owner {
                            pick(c).write_f32(&values)?;
                        }
                    }
                }
            }
        }
        if self.scheme.shards_parameters() && executes {
            self.share_whole_parameters()?;
        }
        Ok(())
    }

    /// FSDP, kernels running: the whole parameters the next all-gathers copy out, from every
    /// card's shards.
    fn share_whole_parameters(&mut self) -> Result<(), Error> {
        if !self.scheme.shards_parameters() || !self.cards[0].mlp.device().info().executes {
            return Ok(());
        }
        let Wrapper::Fsdp(first) = &self.cards[0].wrapper else {
            return Ok(());
        };
        let shards = first.borrow().shards().to_vec();
        let n = self.cards.len() as u64;
        let mut whole = Vec::with_capacity(shards.len());
        for (i, s) in shards.iter().enumerate() {
            let mut weight = Vec::new();
            let mut bias = Vec::new();
            for c in &self.cards {
                let l = &c.mlp.layers()[i];
                weight.extend(l.weight.read::<f32>()?);
                bias.extend(l.bias.read::<f32>()?);
            }
            weight.extend(bias);
            whole.push(unpadded(&weight, *s, n));
        }
        self.exchange.borrow_mut().whole = whole;
        Ok(())
    }
}

/// Blocks handed out on `device` so far.
fn allocations(device: &Device) -> u64 {
    device.memory_stats().allocation.all.allocated
}

/// A pipeline's step: the stage that failed is the group's failure (the stages wait on each
/// other, so the first failure stops them all).
fn pipeline_step(
    p: &mut Pipeline,
    batch: Batch<'_>,
    comm: &Rc<RefCell<Comm>>,
) -> Result<GroupStep, (Error, Vec<CardFailure>)> {
    let before: Vec<u64> = p.stages.iter().map(|s| allocations(s.device())).collect();
    match p.train_step(batch, comm) {
        Ok(loss) => Ok(GroupStep {
            cards: Vec::new(),
            loss,
        }),
        Err((card, e)) => {
            let made = allocations(p.stages[card].device()) - before[card];
            let pass = p.stages[card].pass();
            Err(first_error(vec![(card, e, pass, made)]).expect("one error"))
        }
    }
}
