//! The update of the walk: the `GradScaler`'s scalars, the optimizer's state made at the first
//! step, Adam's temporaries (as `crate::mlp`'s optimizer does).

use super::{SCALAR, Walk};
use crate::estimate::ledger::Id;
use crate::mlp::{ForeachDenom, Optimizer, OptimizerImpl};
use crate::role::Role;

impl Walk<'_> {
    /// `optimizer.step()`, through the `GradScaler`'s unscaling when there is one.
    pub(super) fn optimizer_step(&mut self) {
        if !self.c.strategy.scales_loss() {
            return self.update();
        }
        let s64 = self.led.alloc(Role::Temporary, (self.round)(8));
        let inv64 = self.led.alloc(Role::Temporary, (self.round)(8));
        self.led.drop(s64);
        let inv = self.led.alloc(Role::Temporary, (self.round)(SCALAR));
        self.led.drop(inv64);
        let [found, per_device, for_step] =
            [0; 3].map(|_| self.led.alloc(Role::Temporary, (self.round)(SCALAR)));
        self.led.drop_all([inv, found, for_step]);
        self.update();
        self.led.drop(per_device);
    }

    /// The update: state made at the first step; Adam's temporaries (foreach: all at once,
    /// and under PyTorch 2.0 a second set; for-loop: one parameter's at a time; fused: none).
    fn update(&mut self) {
        // Each parameter's bytes, with its layer.
        let sizes: Vec<(usize, u64)> = (self.params.iter().enumerate())
            .flat_map(|(layer, &(i, o))| [(layer, i * o * self.param), (layer, o * self.param)])
            .collect();
        let adam = matches!(self.c.optimizer, Optimizer::Adam { .. });
        if self.state.is_empty() {
            let fused = self.c.strategy.optimizer_impl == OptimizerImpl::Fused;
            for &(layer, bytes) in &sizes {
                let role = Role::OptimizerState { layer };
                let copies = if adam {
                    2
                } else {
                    self.c.optimizer.states_per_parameter()
                };
                if adam && fused {
                    self.state.push(self.led.alloc(role, (self.round)(SCALAR)));
                }
                for _ in 0..copies {
                    self.state.push(self.led.alloc(role, (self.round)(bytes)));
                }
            }
        }
        if !adam {
            return;
        }
        match self.c.strategy.optimizer_impl {
            OptimizerImpl::Foreach => {
                // The square roots; under 2.0 the out-of-place `denom` beside them.
                let lists = match self.c.strategy.foreach_denom {
                    ForeachDenom::InPlace => 1,
                    ForeachDenom::OutOfPlace => 2,
                };
                let temps: Vec<Id> = (0..lists)
                    .flat_map(|_| &sizes)
                    .map(|&(_, b)| self.led.alloc(Role::Temporary, (self.round)(b)))
                    .collect();
                self.led.drop_all(temps.into_iter().rev());
            }
            OptimizerImpl::ForLoop => {
                let mut last: Option<Id> = None;
                for &(_, b) in &sizes {
                    let root = self.led.alloc(Role::Temporary, (self.round)(b));
                    let d = self.led.alloc(Role::Temporary, (self.round)(b));
                    self.led.drop(root);
                    let old = last.replace(d);
                    self.led.drop_all(old);
                }
                self.led.drop_all(last);
            }
            OptimizerImpl::Fused => {}
        }
    }
}
