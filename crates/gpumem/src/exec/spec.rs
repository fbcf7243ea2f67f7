//! The settings of the operations that have some, shared by `ops` (which checks them) and
//! the backings (which run them), so that neither depends on the other for them.

/// `C = op(A) · op(B) (+ bias)`, with `op` the identity or the transpose: every product of
/// the step makes a new tensor (gradients are accumulated by `add_`, as PyTorch does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Matmul {
    pub trans_a: bool,
    pub trans_b: bool,
}

/// Adam's settings for one update (PyTorch's defaults: betas 0.9, 0.999, eps 1e-8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamStep {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    /// 1 for the first update (for bias correction).
    pub step: u32,
}
