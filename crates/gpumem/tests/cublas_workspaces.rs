//! The step with PyTorch's cuBLAS workspaces, against hand-computed cases: which handle takes
//! which workspace when, that they stay through steps and `empty_cache()`, and that clearing
//! them gives back exactly their bytes. Rules: `gpumem::cublas`; sizes by hand below.

use gpumem::Device;
use gpumem::alloc::EventKind;
use gpumem::cublas::{DEFAULT_LT_WORKSPACE, TorchRules, WorkspaceRules};
use gpumem::mlp::{Batch, Mlp, MlpConfig};

/// 4096 KiB × 2 + 16 KiB × 8: PyTorch's default before Hopper, by hand.
const PRE_HOPPER: u64 = 8_519_680;

/// Two SGD steps of the lesson's network, two hidden layers of 64, at batch 256, on a plan
/// device; the labels of the allocations in order, and the device.
fn two_steps(workspaces: Option<(TorchRules, bool)>) -> (Vec<String>, Device) {
    let device = Device::plan(1 << 30);
    if let Some((rules, cached)) = workspaces {
        device.set_cublas_workspaces(WorkspaceRules::for_torch(
            rules,
            cached,
            PRE_HOPPER,
            DEFAULT_LT_WORKSPACE,
        ));
    }
    let config = MlpConfig::lesson(64).with_layers(2);
    let mut mlp = Mlp::new(&device, &config, 1).unwrap();
    device.start_trace();
    for _ in 0..2 {
        mlp.train_step(Batch::Planned(256)).unwrap();
    }
    let labels = device
        .take_trace()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Alloc)
        .map(|e| e.label.clone())
        .collect();
    (labels, device)
}

fn after(labels: &[String], label: &str) -> String {
    let at = labels.iter().position(|l| l == label).expect(label);
    labels[at - 1].clone()
}

#[test]
fn no_workspaces_by_default() {
    let (labels, device) = two_steps(None);
    assert!(labels.iter().all(|l| !l.contains("workspace")));
    assert_eq!(device.cublas_workspace_bytes(), 0);
}

/// torch ≈2.8–2.10: the
/// main thread's first `addmm` takes its cuBLAS workspace right after its output `z0`, then
/// cuBLASLt's; autograd's thread takes its cuBLAS workspace after the first backward
/// product's output — the top layer's input gradient, `a1.grad`. Once each, over two steps.
#[test]
fn each_handle_takes_its_workspaces_after_its_first_products_output() {
    let (labels, device) = two_steps(Some((TorchRules::V2_10, true)));
    let main = "cublas_workspace (main thread)";
    let lt = "cublaslt_workspace (main thread)";
    let autograd = "cublas_workspace (autograd thread)";
    for l in [main, lt, autograd] {
        assert_eq!(labels.iter().filter(|x| x.as_str() == l).count(), 1, "{l}");
    }
    assert_eq!(after(&labels, main), "z0");
    assert_eq!(after(&labels, lt), main);
    assert_eq!(after(&labels, autograd), "a1.grad");
    assert_eq!(device.cublas_workspace_bytes(), 2 * PRE_HOPPER + (1 << 20));
}

/// 2.15's default: cuBLAS keeps its own workspace outside the allocator; only cuBLASLt's
/// 1 MiB goes through it.
#[test]
fn torch_2_15_takes_only_cublaslts_through_the_allocator() {
    let (labels, device) = two_steps(Some((TorchRules::V2_15, false)));
    let taken: Vec<&String> = labels.iter().filter(|l| l.contains("workspace")).collect();
    assert_eq!(taken, ["cublaslt_workspace (main thread)"]);
    assert_eq!(device.cublas_workspace_bytes(), 1 << 20);
}

/// `empty_cache()` leaves them allocated; clearing them gives back exactly their blocks
/// (8,519,680 B is a multiple of 512, so each block is its request; 1 MiB is a small-pool
/// request, rounded to itself).
#[test]
fn empty_cache_leaves_them_and_clearing_frees_exactly_them() {
    let (_, plain) = two_steps(None);
    let (_, with) = two_steps(Some((TorchRules::V2_10, true)));
    for d in [&plain, &with] {
        d.empty_cache();
    }
    let held = 2 * PRE_HOPPER + (1 << 20);
    assert_eq!(with.memory_allocated(), plain.memory_allocated() + held);
    with.clear_cublas_workspaces();
    assert_eq!(with.memory_allocated(), plain.memory_allocated());
    assert_eq!(with.cublas_workspace_bytes(), 0);
}

/// The lesson's PyTorch (≈2.0): cuBLASLt's 1 MiB is taken by every forward `addmm` and given
/// back when it ends, so it shows in the trace once per layer per step and is never held.
#[test]
fn torch_2_0_takes_cublaslts_workspace_for_each_call() {
    let (labels, device) = two_steps(Some((TorchRules::V2_0, false)));
    let lt = "cublaslt_workspace (main thread)";
    // Three linear layers (two hidden, one output), two steps.
    assert_eq!(labels.iter().filter(|l| l.as_str() == lt).count(), 6);
    assert_eq!(after(&labels, lt), "cublas_workspace (main thread)");
    assert_eq!(device.cublas_workspace_bytes(), 2 * PRE_HOPPER);
}
