//! What a tensor is for, set where the tensor is made and carried with it: on the tensor,
//! on the allocator's blocks and trace events, and on the snapshot's frames. The book's
//! groupings of memory — the memory equation's terms (`estimate`), the per-card categories
//! (`parallel::Category`), the graders' questions — are views of it, defined up there, so
//! none of them has to read a tensor's label, which is for people.
//!
//! A role is a typed field in Rust only: nothing serialized carries it (PyTorch's snapshot
//! and the JSON outputs are what they were), so a trace or snapshot read back from a file has
//! no roles.

use std::fmt;

/// What a tensor is for. Layers are numbered from 0, the first hidden layer, to the output
/// layer, as in the labels (`layer0.weight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// A layer's weight or bias: whole, a shard, or gathered for a layer that runs.
    Parameter { layer: usize },
    /// Autocast's float16 copy of a layer's weight or bias, kept for the autocast region.
    ParameterCopy { layer: usize },
    /// A layer's `.grad`: whole or sharded.
    Gradient { layer: usize },
    /// A gradient on its way into `.grad`: float16 before autocast's cast back, or a later
    /// micro-batch's, added into `.grad` and freed.
    GradientPart { layer: usize },
    /// A layer's optimizer state: `exp_avg`, `exp_avg_sq`, `momentum_buffer`, fused Adam's
    /// `step`.
    OptimizerState { layer: usize },
    /// `GradScaler`'s scale and growth tracker, which live as long as the optimizer's state.
    LossScaler,
    /// The batch's features, `x`.
    Input,
    /// The batch's int64 class labels, `y`.
    Labels,
    /// The output layer's output, `y_pred`, which the training loop holds from its forward
    /// pass until the next step's replaces it, as long as the batch.
    Prediction,
    /// A hidden layer's output (after its ReLU), which autograd saves for the backward pass:
    /// `a0`, `a1`, … (`z0`, … under an in-place ReLU).
    Activation { layer: usize },
    /// The forward pass's other tensors: a hidden layer's output before the ReLU (`z0`),
    /// autocast's copies of layer inputs, what the loss makes and saves, the loss itself,
    /// and a pipeline stage's received activation.
    Forward,
    /// A gradient flowing back through the activations (`y_pred.grad`, `relu.grad`,
    /// `a0.grad`, a pipeline stage's received gradient) and the loss's seed.
    ActivationGradient,
    /// Short-lived scratch of the optimizer and the loss scaler: Adam's square roots and
    /// denominators, `found_inf`, the scaled loss.
    Temporary,
    /// A library's workspace (cuBLAS, cuBLASLt): not a tensor, memory the allocator hands a
    /// library.
    Workspace,
    /// DDP's gradient buckets and broadcast chunks, FSDP's all-gather and reduce-scatter
    /// inputs.
    CommBuffer,
}

impl Role {
    /// The layer the tensor belongs to, for a layer's parameters, gradients, state and
    /// activations.
    pub fn layer(self) -> Option<usize> {
        match self {
            Role::Parameter { layer }
            | Role::ParameterCopy { layer }
            | Role::Gradient { layer }
            | Role::GradientPart { layer }
            | Role::OptimizerState { layer }
            | Role::Activation { layer } => Some(layer),
            _ => None,
        }
    }

    /// The model's own tensors, which live from step to step: parameters, their gradients
    /// and their optimizer state (not autocast's copies, not the loss scaler's).
    pub fn is_model(self) -> bool {
        matches!(
            self,
            Role::Parameter { .. } | Role::Gradient { .. } | Role::OptimizerState { .. }
        )
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Role::Parameter { .. } => "parameter",
            Role::ParameterCopy { .. } => "parameter copy",
            Role::Gradient { .. } => "gradient",
            Role::GradientPart { .. } => "gradient part",
            Role::OptimizerState { .. } => "optimizer state",
            Role::LossScaler => "loss scaler",
            Role::Input => "input",
            Role::Labels => "labels",
            Role::Prediction => "prediction",
            Role::Activation { .. } => "activation",
            Role::Forward => "forward",
            Role::ActivationGradient => "activation gradient",
            Role::Temporary => "temporary",
            Role::Workspace => "workspace",
            Role::CommBuffer => "communication buffer",
        };
        match self.layer() {
            Some(layer) => write!(f, "{name} (layer {layer})"),
            None => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests;
