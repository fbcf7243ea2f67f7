//! FSDP2's memory (`fully_shard` on every `Linear`, then on the model), as PyTorch 2.15 runs
//! it (`torch/distributed/fsdp/_fully_shard/`, and the op-by-op trace
//! `reference/pytorch/trace_parallel.txt`):
//!
//! - **sharding**: each parameter's first dimension (PyTorch's `out_features`) is padded to a
//!   multiple of the cards, and each card keeps its chunk of `⌈out/n⌉` rows; the whole
//!   parameters the model was built with are freed layer by layer;
//! - **forward**: a layer's all-gather output (`n` × its shards) is allocated, the whole
//!   parameters (padded) are copied out of it, the layer runs, and the whole parameters are
//!   freed again (unless `reshard_after_forward=False`: ZeRO-2); the all-gather output lives
//!   until the next layer's all-gather (the last one's until the model returns);
//! - **backward**: each layer is gathered again, and the next one is prefetched; after its
//!   gradients are made, a reduce-scatter input (`n` × the shards) takes them, they are
//!   freed, and a reduce-scatter output holds this card's shard of the averaged gradients —
//!   the sharded `.grad`s are views of it. The input lives until the next layer's
//!   reduce-scatter (the last one's until backward ends).
//!
//! The optimizer then works on the shards, so its state is sharded too. On one card there is
//! nothing to gather: the whole parameters are copied from the shard, with no all-gather
//! output and no prefetch (the reduce-scatter buffers stay).

use super::comm::Comm;
use crate::device::Device;
use crate::error::Error;
use crate::mlp::hooks::StepHooks;
use crate::mlp::{Grads, Linear, Mlp};
use crate::role::Role;
use crate::tensor::{DType, Tensor};
use std::cell::RefCell;
use std::rc::Rc;

/// One layer's shapes: the engine's `in × out` weight and PyTorch's padded shards.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shard {
    pub inputs: u64,
    pub outputs: u64,
    /// Rows of PyTorch's `out × in` weight each card keeps: `⌈out / n⌉`.
    pub rows: u64,
}

impl Shard {
    fn new(inputs: u64, outputs: u64, cards: u64) -> Shard {
        Shard {
            inputs,
            outputs,
            rows: outputs.div_ceil(cards),
        }
    }

    /// Values of one card's weight and bias shards.
    pub fn values(&self) -> u64 {
        self.rows * self.inputs + self.rows
    }
}

/// Values the cards hand each other, host-side (kernels ran): the whole parameters every
/// all-gather copies out, and the gradients each reduce-scatter sums.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    /// Per layer: the whole weight (`in × out`, the engine's layout) and bias.
    pub whole: Vec<(Vec<f32>, Vec<f32>)>,
    /// Per layer: the cards' gradients summed, in PyTorch's padded `out × in` layout then the
    /// padded bias.
    pub sums: Vec<Vec<f32>>,
}

/// FSDP on one card.
#[derive(Debug)]
pub(crate) struct Fsdp {
    device: Device,
    card: usize,
    cards: u64,
    reshard_after_forward: bool,
    dtype: DType,
    shards: Vec<Shard>,
    unsharded: Vec<Option<Linear>>,
    gathered: Vec<Option<Tensor>>,
    reduce_input: Option<Tensor>,
    comm: Rc<RefCell<Comm>>,
    exchange: Rc<RefCell<Exchange>>,
    executes: bool,
}

impl Fsdp {
    /// Shards `mlp`'s parameters in place (card `card` of `cards`): each layer's shards are
    /// allocated, then its whole parameters freed.
    pub(crate) fn shard(
        mlp: &mut Mlp,
        card: usize,
        cards: u64,
        reshard_after_forward: bool,
        comm: Rc<RefCell<Comm>>,
        exchange: Rc<RefCell<Exchange>>,
    ) -> Result<Fsdp, Error> {
        let device = mlp.device().clone();
        let executes = device.info().executes;
        let dtype = mlp.layers()[0].weight.dtype();
        let n = mlp.layers().len();
        let mut fsdp = Fsdp {
            device,
            card,
            cards,
            reshard_after_forward,
            dtype,
            shards: Vec::with_capacity(n),
            unsharded: vec![None; n],
            gathered: vec![None; n],
            reduce_input: None,
            comm,
            exchange,
            executes,
        };
        for i in 0..n {
            let whole = &mlp.layers()[i];
            let shard = Shard::new(whole.weight.rows(), whole.weight.cols(), cards);
            fsdp.shards.push(shard);
            let role = Role::Parameter { layer: i };
            let weight =
                fsdp.new_tensor(shard.rows, shard.inputs, role, &format!("layer{i}.weight"))?;
            let bias = fsdp.new_tensor(1, shard.rows, role, &format!("layer{i}.bias"))?;
            if executes {
                let (w, b) = (whole.weight.read::<f32>()?, whole.bias.read::<f32>()?);
                let padded = padded_rows(&w, &b, shard, cards);
                let (ws, bs) = fsdp.chunk(&padded, shard);
                weight.write_f32(&ws)?;
                bias.write_f32(&bs)?;
            }
            drop(mlp.replace_layer(i, Linear { weight, bias }));
        }
        Ok(fsdp)
    }

    fn new_tensor(&self, rows: u64, cols: u64, role: Role, label: &str) -> Result<Tensor, Error> {
        Tensor::new(&self.device, rows, cols, self.dtype, role, label)
    }

    /// This card's chunk of a layer's padded values (weight rows, then bias).
    fn chunk(&self, padded: &[f32], shard: Shard) -> (Vec<f32>, Vec<f32>) {
        let (rows, cols) = (shard.rows as usize, shard.inputs as usize);
        let c = self.card;
        let weight_len = rows * cols * self.cards as usize;
        let w = padded[c * rows * cols..(c + 1) * rows * cols].to_vec();
        let b = padded[weight_len + c * rows..weight_len + (c + 1) * rows].to_vec();
        (w, b)
    }

    pub(crate) fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// Bytes of a layer's all-gather output or reduce-scatter input: every card's shards.
    fn unit_bytes(&self, layer: usize) -> u64 {
        self.shards[layer].values() * self.cards * self.dtype.size()
    }

    /// Issues layer `i`'s all-gather: its output, `n` × the shards. One card gathers
    /// nothing: FSDP copies its shards straight into the whole parameters.
    fn all_gather(&mut self, i: usize) -> Result<(), Error> {
        if self.cards == 1 {
            return Ok(());
        }
        let out = self.new_tensor(
            1,
            self.shards[i].values() * self.cards,
            Role::CommBuffer,
            &format!("all-gather output (layer{i})"),
        )?;
        self.comm
            .borrow_mut()
            .all_gather(self.card, self.unit_bytes(i));
        self.gathered[i] = Some(out);
        Ok(())
    }

    /// Copies layer `i`'s whole parameters out of its all-gather output: the weight's
    /// storage is the padded `n·⌈out/n⌉ × in` values, viewed as the engine's `in × out`.
    fn copy_out(&mut self, i: usize) -> Result<(), Error> {
        let s = self.shards[i];
        let padded_rows = s.rows * self.cards;
        let role = Role::Parameter { layer: i };
        let w = self.new_tensor(
            1,
            padded_rows * s.inputs,
            role,
            &format!("layer{i}.weight (unsharded)"),
        )?;
        let b = self.new_tensor(1, padded_rows, role, &format!("layer{i}.bias (unsharded)"))?;
        let weight = w.flat_view(0, s.inputs, s.outputs, role, &format!("layer{i}.weight"))?;
        let bias = b.flat_view(0, 1, s.outputs, role, &format!("layer{i}.bias"))?;
        if self.executes {
            let ex = self.exchange.borrow();
            weight.write_f32(&ex.whole[i].0)?;
            bias.write_f32(&ex.whole[i].1)?;
        }
        self.unsharded[i] = Some(Linear { weight, bias });
        Ok(())
    }

    fn last(&self) -> usize {
        self.shards.len() - 1
    }
}

/// A layer's weight (`in × out`) and bias as PyTorch lays them out to shard: the weight's
/// `out × in` rows padded with zeros to `n·⌈out/n⌉`, then the bias padded the same way.
pub(crate) fn padded_rows(weight: &[f32], bias: &[f32], s: Shard, cards: u64) -> Vec<f32> {
    let (inputs, outputs) = (s.inputs as usize, s.outputs as usize);
    let rows = (s.rows * cards) as usize;
    let mut out = vec![0.0; rows * inputs + rows];
    for o in 0..outputs {
        for i in 0..inputs {
            out[o * inputs + i] = weight[i * outputs + o];
        }
    }
    out[rows * inputs..rows * inputs + outputs].copy_from_slice(bias);
    out
}

/// The inverse of [`padded_rows`]: the engine's `in × out` weight and the bias.
pub(crate) fn unpadded(padded: &[f32], s: Shard, cards: u64) -> (Vec<f32>, Vec<f32>) {
    let (inputs, outputs) = (s.inputs as usize, s.outputs as usize);
    let rows = (s.rows * cards) as usize;
    let mut weight = vec![0.0; inputs * outputs];
    for o in 0..outputs {
        for i in 0..inputs {
            weight[i * outputs + o] = padded[o * inputs + i];
        }
    }
    let bias = padded[rows * inputs..rows * inputs + outputs].to_vec();
    (weight, bias)
}

impl StepHooks for Fsdp {
    fn unsharded(&self, layer: usize) -> Option<Linear> {
        self.unsharded[layer].clone()
    }

    fn pre_forward(&mut self, i: usize) -> Result<(), Error> {
        if self.unsharded[i].is_some() {
            return Ok(());
        }
        self.all_gather(i)?;
        if i > 0 {
            self.gathered[i - 1] = None;
        }
        self.copy_out(i)
    }

    fn post_forward(&mut self, i: usize) -> Result<(), Error> {
        if self.reshard_after_forward {
            self.unsharded[i] = None;
        }
        if i == self.last() {
            self.gathered[i] = None;
        }
        Ok(())
    }

    fn pre_backward(&mut self, i: usize) -> Result<(), Error> {
        if self.unsharded[i].is_none() {
            if self.gathered[i].is_none() {
                self.all_gather(i)?;
            }
            self.copy_out(i)?;
            self.gathered[i] = None;
        }
        // Prefetch: the layer backward reaches next.
        let prefetch = i > 0 && self.cards > 1;
        if prefetch && self.unsharded[i - 1].is_none() && self.gathered[i - 1].is_none() {
            self.all_gather(i - 1)?;
        }
        Ok(())
    }

    fn post_backward(&mut self, i: usize, grads: &mut Grads) -> Result<(), Error> {
        self.unsharded[i] = None;
        self.reduce_input = None;
        let s = self.shards[i];
        let input = self.new_tensor(
            1,
            s.values() * self.cards,
            Role::CommBuffer,
            &format!("reduce-scatter input (layer{i})"),
        )?;
        self.comm
            .borrow_mut()
            .reduce_scatter(self.card, self.unit_bytes(i));
        if self.executes {
            let (Some(w), Some(b)) = (&grads.weight, &grads.bias) else {
                return Err(Error::Shape(format!(
                    "layer{i}: FSDP found no gradients to reduce"
                )));
            };
            let padded = padded_rows(&w.read::<f32>()?, &b.read::<f32>()?, s, self.cards);
            let mut ex = self.exchange.borrow_mut();
            let sum = &mut ex.sums[i];
            sum.resize(padded.len(), 0.0);
            sum.iter_mut().zip(&padded).for_each(|(a, v)| *a += v);
        }
        grads.weight = None;
        // The output is the sharded gradients' storage: labelled as them.
        let label = format!("layer{i}.weight.grad and bias.grad (reduce-scatter output)");
        let role = Role::Gradient { layer: i };
        let output = self.new_tensor(1, s.values(), role, &label)?;
        grads.bias = None;
        let (weight, bias) = (
            format!("layer{i}.weight.grad"),
            format!("layer{i}.bias.grad"),
        );
        grads.weight = Some(output.flat_view(0, s.rows, s.inputs, role, &weight)?);
        grads.bias = Some(output.flat_view(s.rows * s.inputs, 1, s.rows, role, &bias)?);
        self.reduce_input = (i > 0).then_some(input);
        Ok(())
    }
}

impl Fsdp {
    /// After every card's backward pass: this card's shard of the averaged gradients,
    /// written into its sharded `.grad`s.
    pub(crate) fn write_reduced(&self, mlp: &mut Mlp) -> Result<(), Error> {
        let ex = self.exchange.borrow();
        for (i, s) in self.shards.iter().enumerate() {
            let mean: Vec<f32> = ex.sums[i].iter().map(|v| v / self.cards as f32).collect();
            let (w, b) = self.chunk(&mean, *s);
            let g = mlp.grads_mut(i);
            if let (Some(gw), Some(gb)) = (&g.weight, &g.bias) {
                gw.write_f32(&w)?;
                gb.write_f32(&b)?;
            }
        }
        Ok(())
    }
}
