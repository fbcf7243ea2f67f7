//! The cuBLAS and cuBLASLt workspaces a device's matrix products hold (see [`crate::cublas`]):
//! none unless set, so a device is a tensors-only card by default. Once set, the first product
//! on each handle takes its workspaces through the caching allocator, after the product's
//! output (PyTorch makes `result`, then sets the handle up), and they stay until
//! [`Device::clear_cublas_workspaces`] — `empty_cache()` does not touch them.

use super::{Device, Error};
use crate::alloc::BlockAddr;
use crate::cublas::{Handle, Workspace};

/// What the device holds: the workspaces it is set to take, the thread running now, and the
/// ones taken.
#[derive(Debug, Default)]
pub(crate) struct Workspaces {
    /// Only those that go through the allocator; the library's own are outside it.
    set: Vec<Workspace>,
    /// The thread whose handle a product uses: autograd's during a backward pass.
    thread: Option<Handle>,
    held: Vec<(Workspace, BlockAddr)>,
}

/// The label a workspace's block carries in traces, snapshots and messages.
pub fn label(w: &Workspace) -> String {
    let library = if w.lt {
        "cublaslt_workspace"
    } else {
        "cublas_workspace"
    };
    let thread = match w.handle {
        Handle::Main => "main thread",
        Handle::Autograd => "autograd thread",
    };
    format!("{library} ({thread})")
}

impl Device {
    /// Sets the workspaces this device's products take through its allocator, from
    /// [`crate::cublas::step_workspaces`]; those outside the allocator are left out here.
    pub fn set_cublas_workspaces(&self, workspaces: &[Workspace]) {
        self.inner.borrow_mut().workspaces.set = workspaces
            .iter()
            .copied()
            .filter(|w| w.through_allocator)
            .collect();
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

    /// A matrix product is about to run: the first on this thread's handle takes its
    /// workspaces (`getCurrentCUDABlasHandle`, `getCUDABlasLtWorkspace`).
    pub(crate) fn cublas_product(&self) -> Result<(), Error> {
        let wanted: Vec<Workspace> = {
            let inner = self.inner.borrow();
            let ws = &inner.workspaces;
            let handle = ws.thread.unwrap_or(Handle::Main);
            ws.set
                .iter()
                .filter(|w| w.handle == handle && !ws.held.iter().any(|(h, _)| h == *w))
                .copied()
                .collect()
        };
        for w in wanted {
            let block = self.malloc(w.bytes, &label(&w))?;
            self.inner.borrow_mut().workspaces.held.push((w, block));
        }
        Ok(())
    }

    /// `torch._C._cuda_clearCublasWorkspaces()`: the workspaces go back to the cache (then
    /// `empty_cache()` can return their segments).
    pub fn clear_cublas_workspaces(&self) {
        let held = std::mem::take(&mut self.inner.borrow_mut().workspaces.held);
        for (_, block) in held {
            self.free(block);
        }
    }

    /// The bytes the workspaces taken so far asked for.
    pub fn cublas_workspace_bytes(&self) -> u64 {
        let inner = self.inner.borrow();
        inner.workspaces.held.iter().map(|(w, _)| w.bytes).sum()
    }
}
