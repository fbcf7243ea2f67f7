//! The training step's tensors, moment by moment, as block sizes in a [`Ledger`]: the same
//! schedule as the engine's step ([`crate::mlp`]), PyTorch's, written as arithmetic.

use super::block_bytes;
use super::ledger::{Id, Ledger};
use crate::alloc::{MIN_LARGE_ALLOC, ROUND_LARGE, SMALL_SIZE, round_size};
use crate::cublas::{Handle, Library, WorkspaceRules};
use crate::mlp::{MlpConfig, Precision, ZeroGrad, micro_batches, planned_micro_batches};
use crate::role::Role;
use std::ops::Range;

mod backward;
mod optimizer;

/// Bytes of one float32 scalar (a loss, a count, the loss scale).
const SCALAR: u64 = 4;

/// A tensor of the walk: its ledger entry, columns and bytes per value.
#[derive(Debug, Clone, Copy)]
struct T {
    id: Id,
    cols: u64,
    size: u64,
}

/// What a forward operation saved for backward (as in `crate::mlp::autograd`).
#[derive(Debug)]
enum Node {
    Linear {
        layer: usize,
        input: T,
        weight: Option<T>,
        input_grad: bool,
    },
    Relu {
        output: T,
    },
    LogSoftmax {
        output: T,
    },
    ToFloat32,
    Nll {
        logp: T,
        total_weight: T,
    },
    Scale,
    Checkpoint {
        layers: Range<usize>,
        input: T,
    },
}

/// The walk through two steps of `config` at `batch` rows.
pub(super) struct Walk<'a> {
    c: &'a MlpConfig,
    pub(super) led: Ledger,
    /// Bytes per value of the parameters, of autocast's copies (2) or not.
    param: u64,
    mixed: bool,
    params: Vec<(u64, u64)>,
    grads: Vec<[Option<Id>; 2]>,
    state: Vec<Id>,
    scaler: Option<[Id; 2]>,
    kept: (Option<Id>, Option<Id>),
    /// Rows of the step's first (largest) micro-batch.
    first_rows: u64,
    pub(super) recomputed: u64,
    /// Bytes a request of `n` bytes takes: its block, or `n` itself for the raw sum.
    round: fn(u64) -> u64,
    /// Whether blocks are counted (not raw bytes).
    blocks: bool,
    /// The workspaces matrix products take, the handle running now, and those held.
    ws: WorkspaceRules,
    pub(super) handle: Handle,
    held: Vec<(Handle, Library)>,
}

impl<'a> Walk<'a> {
    pub(super) fn new(c: &'a MlpConfig) -> Walk<'a> {
        Walk {
            c,
            led: Ledger::default(),
            param: c.strategy.precision.parameters().size(),
            mixed: c.strategy.precision == Precision::Mixed,
            params: c.layer_shapes(),
            grads: vec![[None, None]; c.layers as usize + 1],
            state: Vec::new(),
            scaler: None,
            kept: (None, None),
            first_rows: 0,
            recomputed: 0,
            round: block_bytes,
            blocks: true,
            ws: WorkspaceRules::NONE,
            handle: Handle::Main,
            held: Vec::new(),
        }
    }

    /// Matrix products take `ws`'s workspaces (as the device's do).
    pub(super) fn with_workspaces(mut self, ws: WorkspaceRules) -> Self {
        self.ws = ws;
        self
    }

    /// A matrix product after its output exists: the first on this handle takes its
    /// workspaces (as `Device::cublas_product` does); a per-call one is given back at once.
    fn product(&mut self, lt: bool) {
        let handle = self.handle;
        let held = &self.held;
        let taken = self.ws.taken(lt, |l| held.contains(&(handle, l)));
        for (library, bytes, kept) in taken {
            let id = self.led.alloc(Role::Workspace, (self.round)(bytes));
            if kept {
                self.held.push((handle, library));
            } else {
                self.led.drop(id);
            }
        }
    }

    /// Counts requests at their size, without the allocator's rounding (PyTorch's raw tensor
    /// bytes, as MemTracker counts them).
    pub(super) fn raw(mut self) -> Self {
        self.round = |n| n;
        self.blocks = false;
        self
    }

    /// A tensor of the current micro-batch's rows. A later, shorter micro-batch's large
    /// tensor is served from the segment the first micro-batch's tensor of its kind made
    /// (free again, its leftover merged back): split off when more than 1 MiB would be left,
    /// else handed over whole.
    fn batch_t(&mut self, role: Role, rows: u64, cols: u64, size: u64) -> T {
        let (bytes, first) = (rows * cols * size, self.first_rows * cols * size);
        let block = match (self.blocks, round_size(bytes), round_size(first)) {
            (true, Some(b), Some(f)) if rows < self.first_rows && b >= MIN_LARGE_ALLOC => {
                let segment = f.next_multiple_of(ROUND_LARGE);
                if segment - b > SMALL_SIZE { b } else { segment }
            }
            _ => (self.round)(bytes),
        };
        let id = self.led.alloc(role, block);
        T { id, cols, size }
    }

    fn new_t(&mut self, role: Role, rows: u64, cols: u64, size: u64) -> T {
        let id = self.led.alloc(role, (self.round)(rows * cols * size));
        T { id, cols, size }
    }

    /// The loss: a float32 scalar (float64 when everything is).
    fn loss_bytes(&self) -> u64 {
        if self.param == 8 { 8 } else { SCALAR }
    }

    fn hold(&mut self, t: T) -> T {
        self.led.hold(t.id);
        t
    }

    // ANCHOR: model
    /// The model: every layer's weight (`fan_in × fan_out`) and bias, in order.
    pub(super) fn parameters(&mut self, leftover: impl Fn(usize) -> u64) {
        for (i, &(fan_in, fan_out)) in self.params.clone().iter().enumerate() {
            let w = (self.round)(fan_in * fan_out * self.param) + leftover(i);
            let role = Role::Parameter { layer: i };
            self.led.alloc(role, w);
            self.led.alloc(role, (self.round)(fan_out * self.param));
        }
    }
    // ANCHOR_END: model

    // ANCHOR: per_step
    /// One step of `rows`: `zero_grad()`, the batch, each micro-batch's forward and backward
    /// pass (the first two and the last: the ones between repeat the second with at most as
    /// many rows, and the last leaves its `y_pred` and loss to the update), `optimizer.step()`.
    pub(super) fn step(&mut self, rows: u64) {
        if self.c.strategy.zero_grad == ZeroGrad::SetToNone {
            let grads = std::mem::take(&mut self.grads);
            self.led.drop_all(grads.iter().flatten().flatten().copied());
            self.grads = vec![[None, None]; grads.len()];
        }
        let x = self.new_t(Role::Input, rows, self.c.inputs, self.param);
        let y = self.new_t(Role::Labels, rows, 1, 8);
        let k = micro_batches(rows, self.c.strategy.accumulation).len() as u64;
        let planned = planned_micro_batches(rows, k, Some(2));
        self.first_rows = planned[0].1;
        for (_, len) in planned {
            self.micro(x, len, k);
        }
        self.optimizer_step();
        self.led.drop_all([x.id, y.id]);
    }

    /// `y_pred = model(x)`, the loss (divided by `k`), `loss.backward()`.
    fn micro(&mut self, x: T, rows: u64, k: u64) {
        let mut tape = Vec::new();
        let mut cache = Vec::new();
        let y_pred = self.forward(x, rows, &mut tape, &mut cache);
        let old = self.kept.0.replace(self.led.hold(y_pred.id));
        self.led.drop_all(old);
        let loss = self.cross_entropy(y_pred, rows, &mut tape);
        self.led.drop(y_pred.id);
        let old = self.kept.1.replace(self.led.hold(loss));
        self.led.drop_all(old);
        if k > 1 {
            let divided = self
                .led
                .alloc(Role::Forward, (self.round)(self.loss_bytes()));
            tape.push(Node::Scale);
            self.led.drop(loss);
            let old = self.kept.1.replace(divided);
            self.led.drop_all(old);
        } else {
            self.led.drop(loss);
        }
        self.led
            .drop_all(cache.drain(..).map(|(_, t): (_, T)| t.id));
        let scaled = self.scale_loss(&mut tape);
        let seed = self
            .led
            .alloc(Role::ActivationGradient, (self.round)(SCALAR));
        let held = self.led.hold(seed);
        self.backward(tape, held, rows);
        self.led
            .drop_all([Some(seed), scaled].into_iter().flatten());
    }
    // ANCHOR_END: per_step

    /// The hidden layers (checkpointed segments save only their input) and the output layer.
    fn forward(
        &mut self,
        x: T,
        rows: u64,
        tape: &mut Vec<Node>,
        cache: &mut Vec<((usize, bool), T)>,
    ) -> T {
        let mut h = self.hold(x);
        let layers = self.c.layers as usize;
        for (range, ck) in crate::mlp::segments(self.c.strategy.checkpointing, layers) {
            if ck {
                let out = self.blocks(range.clone(), h, rows, None, cache);
                self.recomputed += range.len() as u64;
                tape.push(Node::Checkpoint {
                    layers: range,
                    input: h,
                });
                h = out;
            } else {
                let out = self.blocks(range, h, rows, Some(tape), cache);
                self.led.drop(h.id);
                h = out;
            }
        }
        let y_pred = self.linear(layers, h, rows, Some(tape), cache);
        self.led.drop(h.id);
        y_pred
    }

    fn blocks(
        &mut self,
        layers: Range<usize>,
        input: T,
        rows: u64,
        mut tape: Option<&mut Vec<Node>>,
        cache: &mut Vec<((usize, bool), T)>,
    ) -> T {
        let mut h = self.hold(input);
        for i in layers {
            let z = self.linear(i, h, rows, tape.as_deref_mut(), cache);
            let a = self.relu(i, z, rows, tape.as_deref_mut());
            self.led.drop(h.id);
            h = a;
        }
        h
    }

    /// Autocast's float16 copy of a parameter, made once per autocast region.
    fn cast_param(&mut self, cache: &mut Vec<((usize, bool), T)>, key: (usize, bool)) -> T {
        if let Some(&(_, t)) = cache.iter().find(|(k, _)| *k == key) {
            return self.hold(t);
        }
        let (fan_in, fan_out) = self.params[key.0];
        let t = self.new_t(
            Role::ParameterCopy { layer: key.0 },
            if key.1 { 1 } else { fan_in },
            fan_out,
            2,
        );
        cache.push((key, t));
        self.hold(t)
    }

    fn linear(
        &mut self,
        i: usize,
        input: T,
        rows: u64,
        tape: Option<&mut Vec<Node>>,
        cache: &mut Vec<((usize, bool), T)>,
    ) -> T {
        let input_grad = i > 0;
        let out_cols = self.params[i].1;
        let (input, weight, bias) = if self.mixed {
            let b = self.cast_param(cache, (i, true));
            let w = self.cast_param(cache, (i, false));
            let x = if input.size == 2 {
                self.hold(input)
            } else {
                self.batch_t(Role::Forward, rows, input.cols, 2)
            };
            (x, Some(w), Some(b))
        } else {
            (self.hold(input), None, None)
        };
        let size = if self.mixed { 2 } else { self.param };
        let role = if i == self.c.layers as usize {
            Role::Prediction
        } else {
            Role::Forward
        };
        let z = self.batch_t(role, rows, out_cols, size);
        self.product(true);
        match tape {
            Some(tape) => {
                let weight = match weight {
                    Some(w) if !input_grad => {
                        self.led.drop(w.id);
                        None
                    }
                    w => w,
                };
                tape.push(Node::Linear {
                    layer: i,
                    input,
                    weight,
                    input_grad,
                });
            }
            None => self
                .led
                .drop_all([Some(input.id), weight.map(|w| w.id)].into_iter().flatten()),
        }
        self.led.drop_all(bias.map(|b| b.id));
        z
    }

    fn relu(&mut self, layer: usize, z: T, rows: u64, tape: Option<&mut Vec<Node>>) -> T {
        let a = if self.c.strategy.relu_inplace {
            z
        } else {
            let a = self.batch_t(Role::Activation { layer }, rows, z.cols, z.size);
            self.led.drop(z.id);
            a
        };
        if let Some(tape) = tape {
            let output = self.hold(a);
            tape.push(Node::Relu { output });
        }
        a
    }

    /// `log_softmax` then `nll_loss`; returns the loss.
    fn cross_entropy(&mut self, y_pred: T, rows: u64, tape: &mut Vec<Node>) -> Id {
        let mut logp = self.batch_t(Role::Forward, rows, y_pred.cols, y_pred.size);
        let output = self.hold(logp);
        tape.push(Node::LogSoftmax { output });
        if logp.size == 2 {
            let wide = self.batch_t(Role::Forward, rows, logp.cols, 4);
            self.led.drop(logp.id);
            logp = wide;
            tape.push(Node::ToFloat32);
        }
        let loss = self
            .led
            .alloc(Role::Forward, (self.round)(self.loss_bytes()));
        let total_weight = self.new_t(Role::Forward, 1, 1, logp.size);
        tape.push(Node::Nll { logp, total_weight });
        loss
    }

    /// `scaler.scale(loss)`: the scaler's own tensors at the first use, then the scaled loss.
    fn scale_loss(&mut self, tape: &mut Vec<Node>) -> Option<Id> {
        if !self.c.strategy.scales_loss() {
            return None;
        }
        if self.scaler.is_none() {
            self.scaler =
                Some([0, 1].map(|_| self.led.alloc(Role::LossScaler, (self.round)(SCALAR))));
        }
        tape.push(Node::Scale);
        Some(
            self.led
                .alloc(Role::Temporary, (self.round)(self.loss_bytes())),
        )
    }
}
