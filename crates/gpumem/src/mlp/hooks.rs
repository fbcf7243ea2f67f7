//! The points where PyTorch's wrappers hook into a training step — DDP's autograd hook per
//! gradient, FSDP's pre/post-forward and pre/post-backward per layer, and
//! `ZeroRedundancyOptimizer`'s choice of the parameters a card updates — so that a multi-card
//! scheme (the `parallel` module, a floor above this one) runs the same step as one card, with its own memory added
//! exactly where PyTorch adds it.

use super::{Grads, Linear, Mlp};
use crate::error::Error;
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::rc::Rc;

/// What a wrapper does at each hook; every method does nothing by default.
pub(crate) trait StepHooks: std::fmt::Debug {
    /// The layer's parameters as its kernels see them, when the wrapper holds them (FSDP
    /// between its all-gather and its reshard); `None` means the network's own.
    fn unsharded(&self, _layer: usize) -> Option<Linear> {
        None
    }
    /// Before the layer's forward (FSDP's pre-forward: all-gather).
    fn pre_forward(&mut self, _layer: usize) -> Result<(), Error> {
        Ok(())
    }
    /// After the layer's forward (FSDP's post-forward: reshard).
    fn post_forward(&mut self, _layer: usize) -> Result<(), Error> {
        Ok(())
    }
    /// Before the layer's backward (FSDP's pre-backward: all-gather, prefetch).
    fn pre_backward(&mut self, _layer: usize) -> Result<(), Error> {
        Ok(())
    }
    /// After `AccumulateGrad` filled `.grad` (DDP's autograd hook); may replace the gradient.
    fn grad_ready(
        &mut self,
        _layer: usize,
        _bias: bool,
        _grad: &mut Option<Tensor>,
    ) -> Result<(), Error> {
        Ok(())
    }
    /// After the layer's backward (FSDP's post-backward: reduce-scatter); may replace the
    /// gradients.
    fn post_backward(&mut self, _layer: usize, _grads: &mut Grads) -> Result<(), Error> {
        Ok(())
    }
    /// Whether this card's optimizer updates parameter `index` (in `model.parameters()`
    /// order): `ZeroRedundancyOptimizer` gives each parameter to one card.
    fn updates(&self, _index: usize) -> bool {
        true
    }
}

/// Hooks shared between a network and the scheme that drives it.
pub(crate) type SharedHooks = Rc<RefCell<dyn StepHooks>>;

impl Mlp {
    /// Runs `f` on the hooks, if any.
    pub(super) fn hook(
        &self,
        f: impl FnOnce(&mut dyn StepHooks) -> Result<(), Error>,
    ) -> Result<(), Error> {
        match &self.hooks {
            Some(h) => f(&mut *h.borrow_mut()),
            None => Ok(()),
        }
    }

    /// Layer `i`'s parameters as its kernels use them (a shared handle, no copy).
    pub(super) fn layer_params(&self, i: usize) -> Linear {
        let held = self.hooks.as_ref().and_then(|h| h.borrow().unsharded(i));
        held.unwrap_or_else(|| self.layers[i].clone())
    }

    /// Whether the optimizer of this card updates parameter `index`.
    pub(super) fn updates(&self, index: usize) -> bool {
        self.hooks
            .as_ref()
            .is_none_or(|h| h.borrow().updates(index))
    }

    /// Puts `hooks` at the step's hook points (a multi-card scheme).
    pub(crate) fn set_hooks(&mut self, hooks: SharedHooks) {
        self.hooks = Some(hooks);
    }

    /// Replaces the network's own parameters of layer `i` (FSDP keeps shards there).
    pub(crate) fn replace_layer(&mut self, i: usize, layer: Linear) -> Linear {
        std::mem::replace(&mut self.layers[i], layer)
    }

    /// Layer `i`'s gradients, for a scheme that writes reduced values into them.
    pub(crate) fn grads_mut(&mut self, i: usize) -> &mut Grads {
        &mut self.grads[i]
    }
}
