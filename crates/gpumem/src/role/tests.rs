//! Every tensor of traced steps — one card under each strategy, and every parallel scheme —
//! has the role its label says, and the views of roles are what the labels gave before.

use super::Role::{self, *};
use crate::alloc::{EventKind, Trace};
use crate::cublas::{DEFAULT_LT_WORKSPACE, TorchRules, WorkspaceRules};
use crate::device::{Device, DeviceOptions};
use crate::lesson::planning_unlimited;
use crate::measure::measure_step_traced;
use crate::mlp::{
    Batch, Checkpointing, MlpConfig, Optimizer, OptimizerImpl, Precision, Strategy, ZeroGrad,
};
use crate::parallel::{Category, Group, Scheme};

/// The layer in `layer{N}.…`, and what follows the number.
fn layer_of(label: &str) -> Option<(usize, &str)> {
    let rest = label.strip_prefix("layer")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    Some((rest[..digits].parse().ok()?, &rest[digits..]))
}

/// The role a tensor's label says it has. `relu_inplace`: `zN` is the activation.
fn role_of_label(label: &str, relu_inplace: bool) -> Role {
    if let Some((layer, what)) = layer_of(label) {
        return if [" _foreach_sqrt", " sqrt", " denom"]
            .iter()
            .any(|s| what.ends_with(s))
        {
            Temporary
        } else if what.ends_with("(float16 copy)") {
            ParameterCopy { layer }
        } else if what.ends_with(".grad (float16)") {
            GradientPart { layer }
        } else if what.contains(".grad") {
            Gradient { layer }
        } else if [".exp_avg", ".exp_avg_sq", ".momentum_buffer", ".step"]
            .iter()
            .any(|s| what.ends_with(s))
        {
            OptimizerState { layer }
        } else {
            Parameter { layer }
        };
    }
    let numbered = |p: char| {
        let n = label.strip_prefix(p)?;
        n.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| n.parse().ok())?
    };
    if let Some(layer) = numbered('a') {
        return Activation { layer };
    }
    if let Some(layer) = numbered('z') {
        return if relu_inplace {
            Activation { layer }
        } else {
            Forward
        };
    }
    const COMM: [&str; 4] = ["bucket", "all-gather", "reduce-scatter", "broadcast"];
    if COMM.iter().any(|c| label.starts_with(c)) {
        return CommBuffer;
    }
    if label.starts_with("cublas") {
        return Workspace;
    }
    if label.starts_with("GradScaler") {
        return LossScaler;
    }
    match label {
        "x" => Input,
        "y" => Labels,
        "y_pred" | "y_pred (merged)" => Prediction,
        "log_softmax"
        | "log_softmax (float32 copy)"
        | "loss"
        | "total_weight"
        | "loss / k"
        | "loss * len / rows"
        | "activation (received)" => Forward,
        "scaled loss" | "scale (float64)" | "1/scale (float64)" | "inv_scale" => Temporary,
        l if l.starts_with("found_inf") => Temporary,
        l if l.ends_with("(float16 copy)") => Forward,
        l if l.starts_with("loss.grad") || l.ends_with(".grad") => ActivationGradient,
        "nll_loss_backward" | "log_softmax.grad (float16)" | "gradient (received)" => {
            ActivationGradient
        }
        other => panic!("no role for the label {other:?}"),
    }
}

/// The category the per-card chart gave a label before roles (`Category::of`), here as the
/// reference the roles' view is checked against.
fn category_of_label(label: &str) -> Category {
    const COMM: [&str; 4] = ["bucket", "all-gather", "reduce-scatter", "broadcast"];
    if COMM.iter().any(|c| label.starts_with(c)) {
        return Category::CommBuffers;
    }
    let Some((_, what)) = layer_of(label).filter(|(_, w)| w.starts_with('.')) else {
        return Category::Activations;
    };
    let what = &what[1..];
    if what.starts_with("weight.grad") || what.starts_with("bias.grad") {
        Category::Gradients
    } else if what.contains(".exp_avg")
        || what.contains(".momentum_buffer")
        || what.ends_with(".step")
    {
        Category::OptimizerState
    } else if what.contains("_foreach") || what.contains(" sqrt") || what.contains(" denom") {
        Category::Activations
    } else {
        Category::Parameters
    }
}

/// Checks every allocation of `trace`; returns how many there were. `micro`: the step runs
/// micro-batches (gradient accumulation, a pipeline's).
fn check(trace: &Trace, strategy: &Strategy, micro: bool, what: &str) -> usize {
    // A later micro-batch's gradient, or one made into a `.grad` kept from the last step,
    // is a part added into `.grad`: the label does not say so.
    let parts = micro || strategy.accumulation > 1 || strategy.zero_grad == ZeroGrad::Zero;
    let allocs: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Alloc)
        .collect();
    for e in &allocs {
        let role = e
            .role
            .unwrap_or_else(|| panic!("{what}: {} has no role", e.label));
        let want = role_of_label(&e.label, strategy.relu_inplace);
        let ok = role == want
            || (parts
                && matches!((role, want), (GradientPart { layer: a }, Gradient { layer: b }) if a == b));
        assert!(
            ok,
            "{what}: {} is {role:?}, its label says {want:?}",
            e.label
        );
        // The loss scaler's state is optimizer state now; the labels called it an
        // activation.
        if role != LossScaler {
            let want = category_of_label(&e.label);
            assert_eq!(Category::from(role), want, "{what}: {}", e.label);
        }
    }
    allocs.len()
}

fn strategies() -> Vec<Strategy> {
    let plain = Strategy::default();
    vec![
        plain,
        Strategy {
            precision: Precision::Mixed,
            accumulation: 3,
            ..plain
        },
        Strategy {
            checkpointing: Checkpointing::Sqrt,
            relu_inplace: true,
            zero_grad: ZeroGrad::Zero,
            ..plain
        },
        Strategy {
            precision: Precision::Float64,
            optimizer_impl: OptimizerImpl::ForLoop,
            ..plain
        },
        Strategy {
            optimizer_impl: OptimizerImpl::Fused,
            accumulation: 2,
            ..plain
        },
    ]
}

fn optimizers() -> [Optimizer; 3] {
    [
        Optimizer::LESSON,
        Optimizer::Sgd {
            lr: 0.01,
            momentum: 0.9,
        },
        Optimizer::adam(0.001),
    ]
}

#[test]
fn every_tensor_of_a_step_has_the_role_its_label_says() {
    let mut options: DeviceOptions = planning_unlimited();
    // Per-call cuBLASLt workspaces as well as each handle's.
    options.cublas =
        WorkspaceRules::for_torch(TorchRules::V2_0, false, 8_519_680, DEFAULT_LT_WORKSPACE);
    for strategy in strategies() {
        for optimizer in optimizers() {
            let config = MlpConfig::lesson(48)
                .with_layers(3)
                .with_optimizer(optimizer)
                .with_strategy(strategy);
            let device = Device::new(&options).unwrap();
            let (_, trace) = measure_step_traced(&device, &config, 64, 0).unwrap();
            let what = format!("{strategy:?} {optimizer}");
            assert!(check(&trace, &strategy, false, &what) > 20, "{what}");
        }
    }
}

#[test]
fn every_tensor_of_every_scheme_has_the_role_its_label_says() {
    for scheme in Scheme::ALL {
        for optimizer in optimizers() {
            let config = MlpConfig::lesson(40)
                .with_layers(3)
                .with_optimizer(optimizer);
            let devices: Vec<Device> = (0..2).map(|_| Device::plan(1 << 40)).collect();
            devices.iter().for_each(Device::start_trace);
            let mut group = Group::new(&devices, &config, scheme, 0).unwrap();
            for _ in 0..2 {
                group
                    .train_step(Batch::Planned(32))
                    .map_err(|e| e.0)
                    .unwrap();
            }
            for (card, d) in devices.iter().enumerate() {
                let what = format!("{} card {card} {optimizer}", scheme.name());
                let micro = scheme.pipeline().is_some();
                let n = check(&d.take_trace(), &config.strategy, micro, &what);
                assert!(n > 10, "{what}: {n} allocations");
            }
        }
    }
}

#[test]
fn a_role_names_its_layer() {
    assert_eq!(Gradient { layer: 3 }.layer(), Some(3));
    assert_eq!(Forward.layer(), None);
    assert_eq!(Activation { layer: 0 }.to_string(), "activation (layer 0)");
    assert!(OptimizerState { layer: 1 }.is_model());
    assert!(!ParameterCopy { layer: 1 }.is_model());
    assert!(!GradientPart { layer: 1 }.is_model());
}
