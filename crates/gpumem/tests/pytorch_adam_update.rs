//! `foreach` Adam's update against PyTorch's own: the committed fixture
//! (`reference/pytorch/adam_update.py`, run under PyTorch 2.0.1, 2.1.0 and 2.15.0) lists every
//! tensor `optimizer.step()` allocated and freed, in order. The engine, under each run's
//! version (`Rules::of`), must allocate and free the same parameter-sized temporaries in the
//! same order; and on a lesson-sized network, 2.0's update must peak one set of
//! parameter-sized blocks above 2.1's.

use gpumem::alloc::{EventKind, Trace};
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer, OptimizerImpl};
use gpumem::versions::{Rules, TorchVersion};
use gpumem::{Device, DeviceOptions};
use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pytorch_adam_update.json"
);

/// One event of the update: `(alloc?, op, index in model.parameters(), bytes)`; frees carry
/// what their allocation did.
type Event = (bool, String, usize, u64);

/// The fixture's parameter-sized allocations and their frees, in order.
fn pytorch_events(run: &Value) -> Vec<Event> {
    let mut allocs = std::collections::HashMap::new();
    let mut out = Vec::new();
    for e in run["events"].as_array().unwrap() {
        let id = e["id"].as_u64().unwrap();
        if e["event"] == "alloc" {
            let Some(param) = e["param"].as_u64() else {
                continue;
            };
            let ev = (
                true,
                e["op"].as_str().unwrap().to_string(),
                param as usize,
                e["bytes"].as_u64().unwrap(),
            );
            allocs.insert(id, ev.clone());
            out.push(ev);
        } else if let Some((_, op, param, bytes)) = allocs.get(&id) {
            out.push((false, op.clone(), *param, *bytes));
        }
    }
    out
}

/// The network the fixture ran (`Linear(2, H)`, `LAYERS - 1` × `Linear(H, H)`, `Linear(H, 2)`),
/// as `version`'s PyTorch runs `Adam(foreach=True)`.
fn config(version: TorchVersion, hidden: u64, layers: u64) -> MlpConfig {
    let rules = Rules::of(version).release;
    let mut c = MlpConfig::lesson(hidden)
        .with_layers(layers)
        .with_optimizer(Optimizer::adam(0.001));
    c.strategy.zero_grad = rules.zero_grad;
    c.strategy.optimizer_impl = OptimizerImpl::Foreach;
    c.strategy.foreach_denom = rules.foreach_denom;
    c
}

/// The trace of the second of two steps of `batch` rows.
fn second_step(options: &DeviceOptions, config: &MlpConfig, batch: u64) -> Trace {
    let device = Device::new(options).unwrap();
    let mut mlp = Mlp::new(&device, config, 1).unwrap();
    mlp.train_step(Batch::Planned(batch)).unwrap();
    device.start_trace();
    mlp.train_step(Batch::Planned(batch)).unwrap();
    device.take_trace()
}

/// `layer3.bias _foreach_sqrt` → (`_foreach_sqrt`, layer 3, bias).
fn foreach_label(label: &str) -> Option<(String, u64, bool)> {
    let (param, op) = label.split_once(' ')?;
    let op = op
        .strip_prefix("_foreach_")
        .map(|o| format!("_foreach_{o}"))?;
    let (layer, what) = param.strip_prefix("layer")?.split_once('.')?;
    Some((op, layer.parse().ok()?, what == "bias"))
}

/// The engine's `_foreach_*` temporaries and their frees, in order, as [`Event`]s.
fn engine_events(trace: &Trace) -> Vec<Event> {
    let tagged: Vec<_> = trace
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Alloc | EventKind::Free))
        .filter_map(|e| foreach_label(&e.label).map(|l| (e, l)))
        .collect();
    let first = tagged.iter().map(|(_, l)| l.1).min().unwrap_or(0);
    tagged
        .into_iter()
        .map(|(e, (op, layer, bias))| {
            let index = 2 * (layer - first) as usize + usize::from(bias);
            (e.kind == EventKind::Alloc, op, index, e.requested)
        })
        .collect()
}

#[test]
fn foreach_adam_allocates_as_pytorch_does() {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let runs = doc["runs"].as_object().unwrap();
    let versions: Vec<&str> = runs.keys().map(String::as_str).collect();
    for want in ["2.0", "2.1"] {
        assert!(
            versions.iter().any(|v| v.starts_with(&format!("{want}."))),
            "no PyTorch {want} run in the fixture: {versions:?}"
        );
    }
    for (name, run) in runs {
        let version: TorchVersion = name.parse().unwrap();
        let params = run["params"].as_array().unwrap();
        let hidden = params[0]["shape"][0].as_u64().unwrap();
        let layers = params.len() as u64 / 2 - 1;
        let trace = second_step(&planning_unlimited(), &config(version, hidden, layers), 4);
        let (engine, pytorch) = (engine_events(&trace), pytorch_events(run));
        assert!(!pytorch.is_empty(), "{name}: no allocation in the fixture");
        assert_eq!(
            engine, pytorch,
            "PyTorch {name}: the engine's update (left) against PyTorch's (right)"
        );
    }
}

/// The peak allocated while the update's temporaries exist, and the blocks of one set of
/// them (`_foreach_sqrt`'s).
fn update_peak(trace: &Trace) -> (u64, u64) {
    let first = trace
        .events
        .iter()
        .position(|e| e.label.ends_with("_foreach_sqrt"))
        .expect("a foreach update");
    let peak = trace.events[first..]
        .iter()
        .map(|e| e.allocated)
        .max()
        .unwrap();
    let one_set = (trace.events.iter())
        .filter(|e| e.kind == EventKind::Alloc && e.label.ends_with("_foreach_sqrt"))
        .map(|e| e.size)
        .sum();
    (peak, one_set)
}

#[test]
fn torch_2_0s_update_holds_one_more_parameter_sized_set_than_2_1s() {
    let (width, layers, batch) = (5000, 3, 32);
    let at = |v| {
        let c = config(v, width, layers);
        update_peak(&second_step(&planning_unlimited(), &c, batch))
    };
    let (old, one_set) = at(TorchVersion::new(2, 0));
    let (new, set_21) = at(TorchVersion::new(2, 1));
    assert_eq!(one_set, set_21);
    assert_eq!(
        old - new,
        one_set,
        "2.0's update peak {old} B against 2.1's {new} B"
    );
}
