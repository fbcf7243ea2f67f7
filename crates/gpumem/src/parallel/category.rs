//! What each byte on a card is for, from the roles the engine gives its tensors: the
//! stacks of the per-card chart.

use crate::alloc::{EventKind, Trace};
use crate::role::Role;

/// The parts of a card's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Weights and biases: whole, sharded, or gathered for a layer that runs.
    Parameters,
    /// `.grad` of the parameters: whole or sharded.
    Gradients,
    /// `exp_avg`, `exp_avg_sq`, `momentum_buffer`.
    OptimizerState,
    /// The batch, the activations autograd saves, their gradients and the step's
    /// temporaries.
    Activations,
    /// DDP's gradient buckets, FSDP's all-gather and reduce-scatter buffers.
    CommBuffers,
}

impl Category {
    pub const ALL: [Category; 5] = [
        Category::Parameters,
        Category::Gradients,
        Category::OptimizerState,
        Category::Activations,
        Category::CommBuffers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::Parameters => "parameters",
            Category::Gradients => "gradients",
            Category::OptimizerState => "optimizer state",
            Category::Activations => "activations and temporaries",
            Category::CommBuffers => "communication buffers",
        }
    }
}

/// The category of a tensor of `role`. Autocast's float16 copies of the parameters count as
/// parameters and a gradient on its way into `.grad` as a gradient (the memory equation
/// counts both as the step's), the loss scaler's tensors as optimizer state.
impl From<Role> for Category {
    fn from(role: Role) -> Category {
        match role {
            Role::Parameter { .. } | Role::ParameterCopy { .. } => Category::Parameters,
            Role::Gradient { .. } | Role::GradientPart { .. } => Category::Gradients,
            Role::OptimizerState { .. } | Role::LossScaler => Category::OptimizerState,
            Role::CommBuffer => Category::CommBuffers,
            Role::Input
            | Role::Labels
            | Role::Prediction
            | Role::Activation { .. }
            | Role::Forward
            | Role::ActivationGradient
            | Role::Temporary
            | Role::Workspace => Category::Activations,
        }
    }
}

/// Bytes per category (requested bytes, before the allocator's rounding).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CategoryBytes {
    pub parameters: u64,
    pub gradients: u64,
    pub optimizer_state: u64,
    pub activations: u64,
    pub comm_buffers: u64,
}

impl CategoryBytes {
    pub fn get(&self, c: Category) -> u64 {
        match c {
            Category::Parameters => self.parameters,
            Category::Gradients => self.gradients,
            Category::OptimizerState => self.optimizer_state,
            Category::Activations => self.activations,
            Category::CommBuffers => self.comm_buffers,
        }
    }

    fn slot(&mut self, c: Category) -> &mut u64 {
        match c {
            Category::Parameters => &mut self.parameters,
            Category::Gradients => &mut self.gradients,
            Category::OptimizerState => &mut self.optimizer_state,
            Category::Activations => &mut self.activations,
            Category::CommBuffers => &mut self.comm_buffers,
        }
    }

    pub fn total(&self) -> u64 {
        Category::ALL.iter().map(|&c| self.get(c)).sum()
    }

    /// The live bytes per category at the moment `trace` peaks in requested bytes (the
    /// first such moment).
    pub fn at_peak(trace: &Trace) -> CategoryBytes {
        let mut live = CategoryBytes::default();
        let mut best = CategoryBytes::default();
        let mut sizes = std::collections::HashMap::new();
        for e in &trace.events {
            match e.kind {
                EventKind::Alloc => {
                    // Memory allocated without a role is none of the model's.
                    let c = e.role.map_or(Category::Activations, Category::from);
                    *live.slot(c) += e.requested;
                    sizes.insert(e.addr, (c, e.requested));
                    if live.total() > best.total() {
                        best = live;
                    }
                }
                EventKind::Free => {
                    if let Some((c, n)) = sizes.remove(&e.addr) {
                        *live.slot(c) -= n;
                    }
                }
                _ => {}
            }
        }
        best
    }
}
