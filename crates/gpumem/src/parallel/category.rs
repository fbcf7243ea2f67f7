//! What each byte on a card is for, from the labels the engine gives its tensors: the
//! stacks of the per-card chart.

use crate::alloc::{EventKind, Trace};

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

    /// The category of a tensor labelled `label`.
    pub fn of(label: &str) -> Category {
        const COMM: [&str; 4] = ["bucket", "all-gather", "reduce-scatter", "broadcast"];
        if COMM.iter().any(|c| label.starts_with(c)) {
            return Category::CommBuffers;
        }
        let Some(rest) = label.strip_prefix("layer") else {
            return Category::Activations;
        };
        let param = rest
            .split_once('.')
            .filter(|(n, _)| n.parse::<u64>().is_ok())
            .map(|(_, what)| what);
        match param {
            Some(what) if what.starts_with("weight.grad") || what.starts_with("bias.grad") => {
                Category::Gradients
            }
            Some(what)
                if what.contains(".exp_avg")
                    || what.contains(".momentum_buffer")
                    || what.ends_with(".step") =>
            {
                Category::OptimizerState
            }
            Some(what) if what.starts_with("weight") || what.starts_with("bias") => {
                if what.contains("_foreach") || what.contains(" sqrt") || what.contains(" denom") {
                    Category::Activations
                } else {
                    Category::Parameters
                }
            }
            _ => Category::Activations,
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
                    let c = Category::of(&e.label);
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

#[cfg(test)]
mod tests {
    use super::Category::{self, *};

    #[test]
    fn labels_fall_in_their_category() {
        let cases = [
            ("layer0.weight", Parameters),
            ("layer12.bias", Parameters),
            ("layer1.weight (unsharded)", Parameters),
            ("layer1.weight.grad", Gradients),
            ("layer1.bias.grad (float16)", Gradients),
            ("layer1.weight.exp_avg", OptimizerState),
            ("layer1.weight.exp_avg_sq", OptimizerState),
            ("layer0.bias.momentum_buffer", OptimizerState),
            ("layer0.weight _foreach_sqrt", Activations),
            ("a0.grad", Activations),
            ("x", Activations),
            ("z3", Activations),
            ("bucket 0", CommBuffers),
            ("broadcast of the parameters from card 0", CommBuffers),
            ("all-gather output (layer2)", CommBuffers),
            ("layers", Activations),
        ];
        for (label, want) in cases {
            assert_eq!(Category::of(label), want, "{label}");
        }
    }
}
