//! Which exception an out-of-memory raises, by version: one phrase that Monitoring memory and
//! the mini-batching page both include, so the book names it one way.

use anyhow::{Result, anyhow};
use gpumem::versions::{KNOWN, TorchVersion};

/// The device-generic name and the release it came in: pytorch#121702 (merged 2024-04-15)
/// renamed `torch._C._OutOfMemoryError` (Python name `torch.cuda.OutOfMemoryError`) to
/// `torch._C.OutOfMemoryError` named `torch.OutOfMemoryError`, which `torch/__init__.py`'s
/// `from torch._C import *` exports. Read in the wheels: 2.3.1's `libtorch_python` names the
/// class `torch.cuda.OutOfMemoryError`, 2.4.0's `torch.OutOfMemoryError`, and 2.4.0's
/// `torch/cuda/__init__.py` binds `OutOfMemoryError = torch._C.OutOfMemoryError`, the same
/// class. A fact we read, not one the engine models (its versions table has no 2.4 row).
pub const GENERIC: (&str, TorchVersion) = ("torch.OutOfMemoryError", TorchVersion::new(2, 4));

/// `torch.OutOfMemoryError` (… versions …): the name, then since when each name holds, from
/// [`GENERIC`] and the engine's versions table (the CUDA name; the oldest row's
/// `RuntimeError`, the base class of both).
pub fn phrase() -> Result<String> {
    let oldest = KNOWN[0];
    let cuda = KNOWN
        .iter()
        .find(|r| r.exception != oldest.exception)
        .ok_or_else(|| anyhow!("the exception never changes in the versions table"))?;
    let (generic, since) = GENERIC;
    anyhow::ensure!(
        cuda.version < since,
        "the CUDA name ({}) is not older than {generic} ({since})",
        cuda.version
    );
    Ok(format!(
        "`{generic}` (so named since PyTorch {since}; `{}`, the same class, since {}; a `{}` \
         in every version)",
        cuda.exception, cuda.version, oldest.exception,
    ))
}
