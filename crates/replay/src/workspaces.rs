//! A GPU's cuBLAS and cuBLASLt workspaces, added to a recorded trace. A trace from a GPU
//! already holds its own; the recorder's, made without one, has none. The rules are the
//! engine's (`gpumem::cublas`, by `--torch` and `--compute-capability`): each thread's first
//! matrix product takes its handle's workspaces through the allocator right after the
//! product's output, and keeps them; a per-call cuBLASLt workspace is freed when its product
//! ends. Which thread ran a product is the recorder's `<thread>` frame (autograd's device
//! thread runs the backward pass on CUDA, with its own handle).

use crate::report::{Workspace, Workspaces};
use crate::source::{Op, Plan, Size};
use gpumem::cublas::{Handle, Library, WorkspaceRules, label};
use gpumem::snapshot::{Frame, Frames};

/// ATen operators that run through a cuBLAS handle on CUDA (composite ones, such as
/// `matmul` and `linear`, reach the trace as these).
const PRODUCTS: [&str; 9] = [
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::addbmm",
    "aten::mv",
    "aten::addmv",
    "aten::dot",
    "aten::_addmm_activation",
];

/// Products that go through cuBLASLt (`gemm_and_bias`): `addmm` with a bias, as
/// `nn.Linear`'s forward pass calls it.
const LT_PRODUCTS: [&str; 2] = ["aten::addmm", "aten::_addmm_activation"];

/// The operator and the thread of a recorder's frames (`<aten>`, `<thread>`).
fn product(frames: &Frames) -> Option<(&str, Handle)> {
    let named = |file: &str| frames.iter().find(|f| f.filename == file).map(|f| &*f.name);
    let op = named("<aten>")?;
    let base = op.split('.').next().unwrap_or(op);
    let base = PRODUCTS.iter().find(|p| **p == base)?;
    let handle = match named("<thread>") {
        Some("autograd") => Handle::Autograd,
        _ => Handle::Main,
    };
    Some((base, handle))
}

/// `plan` with `rules`' workspaces after the products that take them.
pub(crate) fn add(plan: &mut Plan, rules: WorkspaceRules) -> Workspaces {
    let mut added = Workspaces::default();
    if rules.is_none() {
        return added;
    }
    let mut held: Vec<(Handle, Library)> = Vec::new();
    let ops = std::mem::take(&mut plan.ops);
    let mut out = Vec::with_capacity(ops.len() + 8);
    for op in ops {
        let made = match &op {
            Op::Alloc {
                slot,
                entry: Some(_),
                ..
            } => product(&plan.frames[*slot]).map(|(op, h)| (LT_PRODUCTS.contains(&op), h)),
            _ => None,
        };
        out.push(op);
        let Some((lt, handle)) = made else { continue };
        for (library, bytes, kept) in rules.taken(lt, |l| held.contains(&(handle, l))) {
            let slot = plan.frames.len();
            let name = label(library, handle);
            plan.frames
                .push(vec![Frame::tensor(&name, Some(gpumem::Role::Workspace))].into());
            out.push(Op::Alloc {
                slot,
                size: Size::fixed(bytes),
                entry: None,
            });
            if kept {
                held.push((handle, library));
                added.kept += 1;
                added.kept_bytes += bytes;
                added.labels.push(Workspace {
                    label: name.clone(),
                    bytes,
                });
            } else {
                out.push(Op::Free { slot, entry: None });
                added.per_call += 1;
            }
        }
    }
    plan.ops = out;
    added
}
