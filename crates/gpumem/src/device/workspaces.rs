//! The cuBLAS and cuBLASLt workspaces a device's matrix products hold (rules in
//! [`crate::cublas`]): none unless set, so a device is a tensors-only card by default. Once
//! set, the first product on each handle takes its workspaces through the caching allocator,
//! after the product's output (PyTorch makes `result`, then sets the handle up), and they stay
//! until [`Device::clear_cublas_workspaces`] — `empty_cache()` does not touch them.

use super::{Device, Error};
use crate::alloc::BlockAddr;
use crate::cublas::{Handle, Library, WorkspaceRules, label};

/// What the device holds: the rules its products follow, the thread running now, and the
/// workspaces taken.
#[derive(Debug, Default)]
pub(crate) struct Workspaces {
    rules: WorkspaceRules,
    /// The thread whose handle a product uses: autograd's during a backward pass.
    thread: Option<Handle>,
    held: Vec<(Handle, Library, u64, BlockAddr)>,
}

impl Workspaces {
    pub(crate) fn new(rules: WorkspaceRules) -> Self {
        Self {
            rules,
            ..Default::default()
        }
    }
}

impl Device {
    /// Sets the workspaces this device's products take through its allocator.
    pub fn set_cublas_workspaces(&self, rules: WorkspaceRules) {
        self.inner.borrow_mut().workspaces.rules = rules;
    }

    /// Runs `f` as autograd's device thread does a backward pass: its products use that
    /// thread's handle.
    pub(crate) fn on_autograd_thread<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = self
            .inner
            .borrow_mut()
            .workspaces
            .thread
            .replace(Handle::Autograd);
        let out = f();
        self.inner.borrow_mut().workspaces.thread = before;
        out
    }

    /// A matrix product is about to run, after its output exists: the first on this thread's
    /// handle takes its workspaces (`getCurrentCUDABlasHandle`, `getCUDABlasLtWorkspace`).
    /// `lt`: the product goes through cuBLASLt (`addmm` with a bias vector).
    pub(crate) fn cublas_product(&self, lt: bool) -> Result<(), Error> {
        let (handle, taken) = {
            let inner = self.inner.borrow();
            let ws = &inner.workspaces;
            let handle = ws.thread.unwrap_or(Handle::Main);
            let holds = |library| {
                ws.held
                    .iter()
                    .any(|&(h, l, _, _)| h == handle && l == library)
            };
            (handle, ws.rules.taken(lt, holds))
        };
        for (library, bytes, kept) in taken {
            let block = self.malloc(bytes, crate::Role::Workspace, &label(library, handle))?;
            if kept {
                let held = &mut self.inner.borrow_mut().workspaces.held;
                held.push((handle, library, bytes, block));
            } else {
                // Per call: given back when the product ends.
                self.free(block);
            }
        }
        Ok(())
    }

    /// `torch._C._cuda_clearCublasWorkspaces()`: the workspaces go back to the cache (then
    /// `empty_cache()` can return their segments).
    pub fn clear_cublas_workspaces(&self) {
        let held = std::mem::take(&mut self.inner.borrow_mut().workspaces.held);
        for (_, _, _, block) in held {
            self.free(block);
        }
    }

    /// The bytes the workspaces held now asked for.
    pub fn cublas_workspace_bytes(&self) -> u64 {
        let inner = self.inner.borrow();
        inner.workspaces.held.iter().map(|w| w.2).sum()
    }
}
