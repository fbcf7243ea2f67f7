//! The equation's terms are a view of the roles: the engine's own tensors, grouped by the
//! term of their role at the measured peak, are the equation's terms, to the byte.

use super::{Term, estimate, is_exact, reference_setups};
use crate::alloc::{EventKind, Trace};
use crate::device::Device;
use crate::lesson::planning_unlimited;
use crate::measure::measure_step_traced;
use crate::mlp::{Checkpointing, MlpConfig, Optimizer, OptimizerImpl, Strategy, ZeroGrad};
use std::collections::HashMap;

/// Block bytes per term at the first moment `trace` peaks in allocated bytes.
fn terms_at_peak(trace: &Trace) -> [u64; 7] {
    let (mut live, mut best) = ([0u64; 7], [0u64; 7]);
    let mut terms = HashMap::new();
    for e in &trace.events {
        match e.kind {
            EventKind::Alloc => {
                let term = Term::from(e.role.expect("the engine's tensors have roles"));
                live[term as usize] += e.size;
                terms.insert(e.addr, (term, e.size));
                if live.iter().sum::<u64>() > best.iter().sum::<u64>() {
                    best = live;
                }
            }
            EventKind::Free => {
                let (term, size) = terms.remove(&e.addr).expect("freed after allocated");
                live[term as usize] -= size;
            }
            _ => {}
        }
    }
    best
}

fn setups() -> Vec<(MlpConfig, u64)> {
    let plain = Strategy::default();
    let strategies = [
        Strategy {
            accumulation: 3,
            zero_grad: ZeroGrad::Zero,
            ..plain
        },
        Strategy {
            checkpointing: Checkpointing::Sqrt,
            relu_inplace: true,
            optimizer_impl: OptimizerImpl::ForLoop,
            ..plain
        },
    ];
    let mut out = reference_setups();
    for strategy in strategies {
        for optimizer in [Optimizer::LESSON, Optimizer::adam(0.001)] {
            let config = MlpConfig::lesson(100)
                .with_layers(4)
                .with_optimizer(optimizer)
                .with_strategy(strategy);
            out.push((config, 1000));
        }
    }
    out
}

#[test]
fn the_engines_tensors_by_role_are_the_equations_terms() {
    let mut checked = 0;
    for (config, batch) in setups().into_iter().filter(|(c, b)| is_exact(c, *b)) {
        let e = estimate(&config, batch).unwrap();
        let device = Device::new(&planning_unlimited()).unwrap();
        let (_, trace) = measure_step_traced(&device, &config, batch, 1).unwrap();
        let want = [
            e.parameters,
            e.gradients,
            e.optimizer_state,
            e.batch,
            e.activations,
            e.temporaries,
            e.workspaces,
        ];
        let what = format!(
            "L={} H={} B={batch} {:?}",
            config.layers, config.hidden, config.strategy
        );
        assert_eq!(terms_at_peak(&trace), want, "{what}");
        checked += 1;
    }
    assert!(checked >= 18, "only {checked} setups in the domain");
}
