//! `DistributedDataParallel`'s memory: the gradient buckets, and what
//! `gradient_as_bucket_view` changes.
//!
//! As PyTorch 2.x builds them (`torch/nn/parallel/distributed.py`, `reducer.cpp`): at
//! construction one bucket holds every gradient (bucketing waits for the first backward
//! pass to learn the order gradients become ready); at the next forward pass the buckets are
//! rebuilt in that order, the first closed past 1 MiB and the others past 25 MiB. A bucket
//! is one flat tensor. Without bucket views each gradient is copied into its bucket when
//! ready and copied back after the all-reduce, so the gradients exist twice; with them,
//! `.grad` becomes a view of its bucket and the gradient autograd made is freed.

use crate::device::Device;
use crate::error::Error;
use crate::mlp::hooks::StepHooks;
use crate::mlp::{Grads, Mlp};
use crate::ops;
use crate::role::Role;
use crate::tensor::{DType, Tensor};

/// DDP's `bucket_cap_mb` default, 25 MiB.
pub const BUCKET_CAP: u64 = 25 << 20;
/// `dist._DEFAULT_FIRST_BUCKET_BYTES`: 1 MiB.
pub const FIRST_BUCKET_CAP: u64 = 1 << 20;
/// DDP's `broadcast_bucket_size`: the construction's broadcast of the parameters from card 0
/// goes in flat chunks closed past 250 MiB.
pub const BROADCAST_CAP: u64 = 250 << 20;
/// `broadcast_coalesced` keeps at most two chunks in flight.
const BROADCASTS_IN_FLIGHT: usize = 2;

/// One bucket: a flat tensor holding its parameters' gradients one after another.
#[derive(Debug)]
pub(crate) struct Bucket {
    pub tensor: Tensor,
}

/// DDP on one card.
#[derive(Debug)]
pub(crate) struct Ddp {
    device: Device,
    view: bool,
    dtype: DType,
    /// Every parameter's shape (engine layout), in `model.parameters()` order.
    shapes: Vec<(u64, u64)>,
    buckets: Vec<Bucket>,
    /// Parameter → (bucket, first value).
    slots: Vec<(usize, u64)>,
    /// The order gradients became ready in the first backward pass.
    ready: Vec<usize>,
    rebuilt: bool,
    /// ZeRO-1: the parameters this card's optimizer updates.
    owned: Option<Vec<bool>>,
}

/// Parameter `index` in `model.parameters()` order: layer `index / 2`, its bias if odd.
pub(crate) fn param_index(layer: usize, bias: bool) -> usize {
    2 * layer + usize::from(bias)
}

/// Every parameter's shape in `model.parameters()` order.
pub(crate) fn param_shapes(mlp: &Mlp) -> Vec<(u64, u64)> {
    mlp.layers()
        .iter()
        .flat_map(|l| l.tensors().map(|t| (t.rows(), t.cols())))
        .collect()
}

/// `compute_bucket_assignment_by_size`: parameters taken in `order`, a bucket closed once it
/// holds at least its limit (`limits` in turn, the last one repeated).
pub(crate) fn assign_buckets(
    order: &[usize],
    bytes: impl Fn(usize) -> u64,
    limits: &[u64],
) -> Vec<Vec<usize>> {
    let mut buckets = Vec::new();
    let (mut current, mut size, mut limit) = (Vec::new(), 0u64, 0usize);
    for &i in order {
        current.push(i);
        size += bytes(i);
        if size >= limits[limit] {
            buckets.push(std::mem::take(&mut current));
            size = 0;
            limit = (limit + 1).min(limits.len() - 1);
        }
    }
    if !current.is_empty() {
        buckets.push(current);
    }
    buckets
}

impl Ddp {
    /// DDP wrapped around `mlp` on its card: the first bucket, holding every gradient.
    pub(crate) fn new(mlp: &Mlp, view: bool, owned: Option<Vec<bool>>) -> Result<Ddp, Error> {
        let shapes = param_shapes(mlp);
        let mut ddp = Ddp {
            device: mlp.device().clone(),
            view,
            dtype: mlp.layers()[0].weight.dtype(),
            slots: vec![(0, 0); shapes.len()],
            buckets: Vec::new(),
            ready: Vec::new(),
            rebuilt: false,
            owned,
            shapes,
        };
        let all: Vec<usize> = (0..ddp.shapes.len()).collect();
        ddp.sync_module_states(&all)?;
        ddp.build(vec![all])?;
        Ok(ddp)
    }

    /// `_sync_module_states`: card 0's parameters broadcast in flat chunks (a copy of each
    /// chunk, at most two alive at once); the values are already equal here (every card is
    /// initialised from one seed), so only the memory is spent.
    fn sync_module_states(&self, all: &[usize]) -> Result<(), Error> {
        let size = self.dtype.size();
        let chunks = assign_buckets(all, |i| self.values(i) * size, &[BROADCAST_CAP]);
        let mut in_flight = std::collections::VecDeque::new();
        for chunk in chunks {
            if in_flight.len() >= BROADCASTS_IN_FLIGHT {
                in_flight.pop_front();
            }
            let values = chunk.iter().map(|&i| self.values(i)).sum();
            in_flight.push_back(Tensor::new(
                &self.device,
                1,
                values,
                self.dtype,
                Role::CommBuffer,
                "broadcast of the parameters from card 0",
            )?);
        }
        Ok(())
    }

    /// Bytes of every parameter: what the construction's broadcast sends.
    pub(crate) fn parameter_bytes(&self) -> u64 {
        (0..self.shapes.len()).map(|i| self.values(i)).sum::<u64>() * self.dtype.size()
    }

    fn values(&self, i: usize) -> u64 {
        self.shapes[i].0 * self.shapes[i].1
    }

    /// Allocates `assignment`'s buckets (the old ones are let go first).
    fn build(&mut self, assignment: Vec<Vec<usize>>) -> Result<(), Error> {
        self.buckets.clear();
        for (b, params) in assignment.into_iter().enumerate() {
            let mut start = 0;
            for &i in &params {
                self.slots[i] = (b, start);
                start += self.values(i);
            }
            let label = format!("bucket {b}");
            let tensor = Tensor::new(&self.device, 1, start, self.dtype, Role::CommBuffer, &label)?;
            if self.device.info().executes {
                ops::zero(&tensor)?;
            }
            self.buckets.push(Bucket { tensor });
        }
        Ok(())
    }

    /// The rebuild at the first forward pass after a backward pass: buckets in the order
    /// the gradients became ready.
    fn rebuild(&mut self) -> Result<(), Error> {
        let order = std::mem::take(&mut self.ready);
        let size = self.dtype.size();
        let assignment = assign_buckets(
            &order,
            |i| self.values(i) * size,
            &[FIRST_BUCKET_CAP, BUCKET_CAP],
        );
        self.rebuilt = true;
        self.build(assignment)
    }

    /// Parameter `i`'s place in its bucket, as a tensor of its shape (a view of its
    /// gradient: `grad`'s role).
    fn slot_view(&self, i: usize, grad: &Tensor, label: &str) -> Result<Tensor, Error> {
        let (b, start) = self.slots[i];
        let (rows, cols) = self.shapes[i];
        let bucket = &self.buckets[b].tensor;
        bucket.flat_view(start, rows, cols, grad.role(), label)
    }

    pub(crate) fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// After the all-reduce without bucket views: each gradient copied back from its bucket.
    pub(crate) fn copy_back(&self, grads: &[Grads]) -> Result<(), Error> {
        if self.view {
            return Ok(());
        }
        for (layer, g) in grads.iter().enumerate() {
            for (bias, grad) in [(false, &g.weight), (true, &g.bias)] {
                if let Some(grad) = grad {
                    let i = param_index(layer, bias);
                    ops::copy(&self.slot_view(i, grad, "bucket view")?, grad)?;
                }
            }
        }
        Ok(())
    }
}

impl StepHooks for Ddp {
    fn pre_forward(&mut self, layer: usize) -> Result<(), Error> {
        if layer == 0 && !self.rebuilt && !self.ready.is_empty() {
            self.rebuild()?;
        }
        Ok(())
    }

    fn grad_ready(
        &mut self,
        layer: usize,
        bias: bool,
        grad: &mut Option<Tensor>,
    ) -> Result<(), Error> {
        let i = param_index(layer, bias);
        if !self.rebuilt && !self.ready.contains(&i) {
            self.ready.push(i);
        }
        let Some(g) = grad.as_ref() else {
            return Ok(());
        };
        let view = self.slot_view(i, g, g.label())?;
        if view.same_storage(g) {
            return Ok(());
        }
        ops::copy(g, &view)?;
        if self.view {
            *grad = Some(view);
        }
        Ok(())
    }

    fn updates(&self, index: usize) -> bool {
        self.owned.as_ref().is_none_or(|o| o[index])
    }
}
