//! The backward pass of the walk: each node's gradient, the saved tensors let go, the
//! parameters' gradients accumulated (as `crate::mlp`'s backward pass does).

use super::{Node, T, Walk};
use crate::estimate::ledger::Id;
use crate::role::Role;

impl Walk<'_> {
    pub(super) fn backward(&mut self, tape: Vec<Node>, seed: Id, rows: u64) {
        // Autograd's device thread, with its own handle.
        self.handle = crate::cublas::Handle::Autograd;
        let mut grad = Some(T {
            id: seed,
            cols: 1,
            size: 4,
        });
        for node in tape.into_iter().rev() {
            let Some(g) = grad.take() else { break };
            grad = self.backward_node(node, g, rows);
        }
        self.handle = crate::cublas::Handle::Main;
        self.led.drop_all(grad.map(|g| g.id));
    }

    fn backward_node(&mut self, node: Node, grad: T, rows: u64) -> Option<T> {
        let out = match node {
            Node::Scale => Some(self.new_t(Role::ActivationGradient, 1, 1, grad.size)),
            Node::Nll { logp, total_weight } => {
                let out = self.batch_t(Role::ActivationGradient, rows, logp.cols, logp.size);
                self.led.drop_all([logp.id, total_weight.id]);
                Some(out)
            }
            Node::ToFloat32 => Some(self.batch_t(Role::ActivationGradient, rows, grad.cols, 2)),
            Node::LogSoftmax { output } | Node::Relu { output } => {
                let out = self.batch_t(Role::ActivationGradient, rows, output.cols, output.size);
                self.led.drop(output.id);
                Some(out)
            }
            Node::Linear {
                layer,
                input,
                weight,
                input_grad,
            } => {
                return self.linear_backward(layer, [Some(input), weight], input_grad, grad, rows);
            }
            Node::Checkpoint { layers, input } => {
                let mut sub = Vec::new();
                let mut cache = Vec::new();
                let out = self.blocks(layers, input, rows, Some(&mut sub), &mut cache);
                self.led.drop_all([out.id, input.id]);
                self.led.drop_all(cache.drain(..).map(|(_, t)| t.id));
                let mut g = Some(grad);
                for node in sub.into_iter().rev() {
                    let Some(incoming) = g.take() else { break };
                    g = self.backward_node(node, incoming, rows);
                }
                return g;
            }
        };
        self.led.drop(grad.id);
        out
    }

    /// `AddmmBackward0`: the input's gradient, the weight's, the bias's; the saved tensors and
    /// `dz` let go; the parameters' gradients accumulated (cast back to float32 first under
    /// autocast).
    fn linear_backward(
        &mut self,
        layer: usize,
        saved: [Option<T>; 2],
        input_grad: bool,
        dz: T,
        rows: u64,
    ) -> Option<T> {
        let (fan_in, fan_out) = self.params[layer];
        let da = input_grad.then(|| {
            let da = self.batch_t(Role::ActivationGradient, rows, fan_in, dz.size);
            self.product(false);
            da
        });
        let cast_back = dz.size != self.param;
        let role = |w: &Self, bias: bool| {
            if cast_back || w.grads[layer][usize::from(bias)].is_some() {
                Role::GradientPart { layer }
            } else {
                Role::Gradient { layer }
            }
        };
        let (tw, tb) = (role(self, false), role(self, true));
        let dw = self.new_t(tw, fan_in, fan_out, dz.size);
        self.product(false);
        let db = self.new_t(tb, 1, fan_out, dz.size);
        self.led.drop_all(saved.into_iter().flatten().map(|t| t.id));
        self.led.drop(dz.id);
        if cast_back {
            for (g, bias, rows_) in [(dw, false, fan_in), (db, true, 1)] {
                let role = if self.grads[layer][usize::from(bias)].is_some() {
                    Role::GradientPart { layer }
                } else {
                    Role::Gradient { layer }
                };
                let wide = self.new_t(role, rows_, fan_out, self.param);
                self.led.drop(g.id);
                self.accumulate(layer, bias, wide.id);
            }
        } else {
            self.accumulate(layer, true, db.id);
            self.accumulate(layer, false, dw.id);
        }
        da
    }

    /// `AccumulateGrad`: the first gradient becomes `.grad`; later ones are added and freed.
    fn accumulate(&mut self, layer: usize, bias: bool, g: Id) {
        let slot = &mut self.grads[layer][usize::from(bias)];
        if slot.is_some() {
            self.led.drop(g);
        } else {
            *slot = Some(g);
        }
    }
}
