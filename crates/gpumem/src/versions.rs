//! PyTorch's versions as inputs: what each release does by default that the engine models —
//! where the cuBLAS and cuBLASLt workspaces come from, what `zero_grad()` does, how the
//! optimizers loop (and how many temporaries `foreach` Adam holds), how the out-of-memory
//! message reads and which exception carries it.
//!
//! [`KNOWN`] is the table, one row per release where one of those changed, each with its
//! source. A version between two rows takes the earlier row's rules and says so
//! ([`Rules::note`]); one newer than the last row takes the last row's.

use crate::alloc::{MAX_SPLIT_AT_LEAST_FROM, MaxSplitMinimum, OomMessage};
use crate::cublas::{DEFAULT_LT_WORKSPACE, TorchRules, WorkspaceRules, default_cublas_workspace};
use crate::mlp::{ForeachDenom, OptimizerImpl, ZeroGrad};
use std::fmt;
use std::str::FromStr;

/// A PyTorch release, `major.minor` (patch releases change none of the rules here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TorchVersion {
    pub major: u32,
    pub minor: u32,
}

impl TorchVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }
}

/// The minimum split size's rule in `torch` (the newest's where `None`): `>=` 20 MiB from the
/// release [`MAX_SPLIT_AT_LEAST_FROM`] names, `>` before.
pub fn max_split_minimum(torch: Option<TorchVersion>) -> MaxSplitMinimum {
    let (major, minor) = MAX_SPLIT_AT_LEAST_FROM;
    match torch {
        Some(v) if v < TorchVersion::new(major, minor) => MaxSplitMinimum::MoreThan,
        _ => MaxSplitMinimum::AtLeast,
    }
}

impl fmt::Display for TorchVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Why a version or a compute capability could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "`{0}` is not a PyTorch version: expected MAJOR.MINOR as `torch.__version__` starts, \
         e.g. 2.11 or 2.11.0+cu130"
    )]
    NotAVersion(String),
    #[error(
        "PyTorch {0} is older than the oldest release whose rules this program knows ({oldest}); \
         its rules are not modelled",
        oldest = OLDEST
    )]
    TooOld(TorchVersion),
    #[error(
        "`{0}` is not a compute capability: expected MAJOR.MINOR as \
         torch.cuda.get_device_capability() gives it, e.g. 8.0 (A100) or 9.0 (H100)"
    )]
    NotACapability(String),
}

/// `MAJOR.MINOR` at the start of `text`, the rest (`.PATCH`, `+cu130`, `a0`) ignored.
fn major_minor(text: &str) -> Option<(u32, u32)> {
    let t = text.trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    let (major, rest) = t.split_once('.')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (minor, tail) = rest.split_at(digits);
    let tail_ok = tail.is_empty() || tail.starts_with(['.', '+', 'a', 'b', 'r', 'd']);
    if major.is_empty() || !major.bytes().all(|b| b.is_ascii_digit()) || minor.is_empty() {
        return None;
    }
    tail_ok.then_some((major.parse().ok()?, minor.parse().ok()?))
}

impl FromStr for TorchVersion {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (major, minor) =
            major_minor(text).ok_or_else(|| VersionError::NotAVersion(text.to_string()))?;
        let v = TorchVersion::new(major, minor);
        if major == 0 {
            return Err(VersionError::NotAVersion(text.to_string()));
        }
        if v < OLDEST {
            return Err(VersionError::TooOld(v));
        }
        Ok(v)
    }
}

/// A CUDA card's compute capability, `major.minor` (8.0 A100, 9.0 H100, 10.0 B200).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for ComputeCapability {
    type Err = VersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || VersionError::NotACapability(text.to_string());
        let (major, minor) = text.trim().split_once('.').ok_or_else(bad)?;
        let number = |s: &str| -> Option<u32> {
            (!s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        };
        match (number(major), number(minor)) {
            (Some(major), Some(minor)) if major > 0 => Ok(Self { major, minor }),
            _ => Err(bad()),
        }
    }
}

/// Where a release's matrix products get their workspaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workspaces {
    /// cuBLAS keeps its own, outside the caching allocator: memory outside it, like the CUDA
    /// context's (PyTorch ≤ 1.12 has no workspace code in `CublasHandlePool.cpp`).
    Outside,
    /// Through the caching allocator, under these rules.
    Allocator(TorchRules),
}

/// One row of [`KNOWN`]: what a release does by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub version: TorchVersion,
    pub workspaces: Workspaces,
    pub zero_grad: ZeroGrad,
    pub optimizer_impl: OptimizerImpl,
    /// How `foreach` Adam makes its denominator (with `foreach=True` before 2.0 too).
    pub foreach_denom: ForeachDenom,
    pub oom_message: OomMessage,
    /// The exception an out-of-memory raises (`except RuntimeError` catches all of them).
    pub exception: &'static str,
    /// Where each rule of this row was read.
    pub source: &'static str,
}

/// The releases where a modelled default changed, oldest first.
pub const KNOWN: [Release; 6] = [
    Release {
        version: TorchVersion::new(1, 12),
        workspaces: Workspaces::Outside,
        zero_grad: ZeroGrad::Zero,
        optimizer_impl: OptimizerImpl::ForLoop,
        foreach_denom: ForeachDenom::OutOfPlace,
        oom_message: OomMessage::Lesson,
        exception: "RuntimeError",
        source: "`CublasHandlePool.cpp` without workspace code (pytorch@0002be30); \
                 `zero_grad(set_to_none=False)` and `foreach=None` looping per parameter were \
                 the defaults before 2.0; the message `RuntimeError: CUDA out of memory.`",
    },
    Release {
        version: TorchVersion::new(1, 13),
        workspaces: Workspaces::Allocator(TorchRules::V2_0),
        zero_grad: ZeroGrad::Zero,
        optimizer_impl: OptimizerImpl::ForLoop,
        foreach_denom: ForeachDenom::OutOfPlace,
        oom_message: OomMessage::Lesson,
        exception: "torch.cuda.OutOfMemoryError",
        source: "cuBLAS workspaces from the caching allocator (pytorch#83461); \
                 `torch.cuda.OutOfMemoryError` (pytorch#83146), a subclass of RuntimeError",
    },
    Release {
        version: TorchVersion::new(2, 0),
        workspaces: Workspaces::Allocator(TorchRules::V2_0),
        zero_grad: ZeroGrad::SetToNone,
        optimizer_impl: OptimizerImpl::Foreach,
        foreach_denom: ForeachDenom::OutOfPlace,
        oom_message: OomMessage::Lesson,
        exception: "torch.cuda.OutOfMemoryError",
        source: "`zero_grad(set_to_none=True)` by default (pytorch#92731); `foreach` the \
                 default for CUDA tensors (pytorch#92306, pytorch#95862)",
    },
    Release {
        version: TorchVersion::new(2, 1),
        workspaces: Workspaces::Allocator(TorchRules::V2_0),
        zero_grad: ZeroGrad::SetToNone,
        optimizer_impl: OptimizerImpl::Foreach,
        foreach_denom: ForeachDenom::InPlace,
        oom_message: OomMessage::Current,
        exception: "torch.cuda.OutOfMemoryError",
        source: "the message `GPU 0 has a total capacity of … Including non-PyTorch memory` \
                 (dated by users' 2.1 reports, not read in the source); foreach Adam adds `eps` \
                 into its square roots in place (`_foreach_add_`, `torch/optim/adam.py` of \
                 v2.1.0; pytorch#97712), where 1.12 to 2.0 made `denom` beside them with an \
                 out-of-place `_foreach_add`: one parameter-sized temporary instead of two",
    },
    Release {
        version: TorchVersion::new(2, 8),
        workspaces: Workspaces::Allocator(TorchRules::V2_10),
        zero_grad: ZeroGrad::SetToNone,
        optimizer_impl: OptimizerImpl::Foreach,
        foreach_denom: ForeachDenom::InPlace,
        oom_message: OomMessage::Current,
        exception: "torch.cuda.OutOfMemoryError",
        source: "one persistent cuBLASLt workspace per handle (pytorch#156495, merged \
                 2025-06-27: 2.8 or 2.9, we take 2.8)",
    },
    Release {
        version: TorchVersion::new(2, 15),
        workspaces: Workspaces::Allocator(TorchRules::V2_15),
        zero_grad: ZeroGrad::SetToNone,
        optimizer_impl: OptimizerImpl::Foreach,
        foreach_denom: ForeachDenom::InPlace,
        oom_message: OomMessage::Current,
        exception: "torch.cuda.OutOfMemoryError",
        source: "`TORCH_CUBLAS_WORKSPACE_CACHE` (off by default on CUDA: cuBLAS's own \
                 workspace outside the allocator), a string of 2.15.0+cu132's \
                 libtorch_cuda.so; 32 MiB for compute capability 9–12",
    },
];

/// The oldest release the table knows.
pub const OLDEST: TorchVersion = KNOWN[0].version;

/// The compute capability the engine assumes when none is given: Volta's, 7.0 (every
/// generation before Hopper gets the same workspaces). An input we chose.
pub const DEFAULT_COMPUTE_CAPABILITY: ComputeCapability = ComputeCapability { major: 7, minor: 0 };

/// A version's rules: the row it takes, for the version asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// The version asked for.
    pub asked: TorchVersion,
    /// The row whose rules apply.
    pub release: Release,
}

impl Rules {
    /// The rules of `version`: its own row, or the latest row before it.
    pub fn of(version: TorchVersion) -> Rules {
        let release = KNOWN
            .iter()
            .rev()
            .find(|r| r.version <= version)
            .copied()
            .unwrap_or(KNOWN[0]);
        Rules {
            asked: version,
            release,
        }
    }

    /// When the version is not a row of its own: which row's rules it took, and why.
    pub fn note(&self) -> Option<String> {
        (self.asked != self.release.version).then(|| {
            let newer = KNOWN.iter().find(|r| r.version > self.asked);
            match newer {
                Some(next) => format!(
                    "PyTorch {} takes {}'s rules: no modelled default changed between {} and {}",
                    self.asked, self.release.version, self.release.version, next.version
                ),
                None => format!(
                    "PyTorch {} takes {}'s rules, the newest this program knows",
                    self.asked, self.release.version
                ),
            }
        })
    }

    /// The workspaces a card of `capability` takes through the allocator under these rules.
    pub fn workspaces(&self, capability: ComputeCapability) -> WorkspaceRules {
        match self.release.workspaces {
            Workspaces::Outside => WorkspaceRules::NONE,
            Workspaces::Allocator(rules) => WorkspaceRules::for_torch(
                rules,
                false,
                default_cublas_workspace(rules, capability.major, capability.minor),
                DEFAULT_LT_WORKSPACE,
            ),
        }
    }

    /// One phrase for outputs: `PyTorch 1.12's defaults (…)`.
    pub fn describe(&self) -> String {
        let r = &self.release;
        let zero_grad = match r.zero_grad {
            ZeroGrad::Zero => "zero_grad() zeroes the gradients",
            ZeroGrad::SetToNone => "zero_grad() frees the gradients",
        };
        let loops = match (r.optimizer_impl, r.foreach_denom) {
            (OptimizerImpl::ForLoop, _) => "optimizers loop per parameter",
            (OptimizerImpl::Foreach, ForeachDenom::InPlace) => "foreach optimizers",
            (OptimizerImpl::Foreach, ForeachDenom::OutOfPlace) => {
                "foreach optimizers, Adam's square roots and denominators both held"
            }
            (OptimizerImpl::Fused, _) => "fused optimizers",
        };
        let workspaces = match r.workspaces {
            Workspaces::Outside => "cuBLAS's workspace outside the allocator",
            Workspaces::Allocator(TorchRules::V2_15) => {
                "cuBLAS's workspace outside the allocator, cuBLASLt's in it"
            }
            Workspaces::Allocator(_) => "cuBLAS workspaces in the allocator",
        };
        format!(
            "PyTorch {}'s defaults ({zero_grad}, {loops}, {workspaces})",
            self.asked
        )
    }
}

#[cfg(test)]
mod tests;

/// A CUDA context as a card measured it: the memory taken before any tensor
/// (`torch.cuda.mem_get_info()` at a fresh process's start, total − free).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasuredContext {
    pub bytes: u64,
    pub card: &'static str,
    pub torch: &'static str,
}

/// An NVIDIA H200 with PyTorch 2.11.0+cu130, Nov 2026
/// (`reference/pytorch/gpu/2026-11-28-h200/part2/pytorch_probe/challenge1_cuda.json`; memviz's
/// test `the_measured_context_is_the_records` holds it to that record).
pub const MEASURED_CONTEXT: MeasuredContext = MeasuredContext {
    bytes: 552_402_944,
    card: "NVIDIA H200",
    torch: "2.11",
};

/// A row's workspace rules as a card confirmed them: a recording replayed with the row's
/// workspaces at that capability gave the card's own peaks to the byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasuredWorkspaces {
    /// The row of [`KNOWN`] whose rules were confirmed.
    pub row: TorchVersion,
    pub capability: ComputeCapability,
    pub card: &'static str,
    pub torch: &'static str,
}

/// The rows a card confirmed: the 2.8 row at 9.0, on an NVIDIA H200 with PyTorch 2.11
/// (`reference/pytorch/gpu/2026-11-28-h200/part5`; memviz's test
/// `the_measured_workspaces_are_the_runs` holds it to that run).
pub const MEASURED_WORKSPACES: [MeasuredWorkspaces; 1] = [MeasuredWorkspaces {
    row: TorchVersion::new(2, 8),
    capability: ComputeCapability { major: 9, minor: 0 },
    card: "NVIDIA H200",
    torch: "2.11",
}];

impl Rules {
    /// The card that confirmed these rules' workspaces at `capability`, if one did.
    pub fn measured_on(&self, capability: ComputeCapability) -> Option<MeasuredWorkspaces> {
        MEASURED_WORKSPACES
            .iter()
            .copied()
            .find(|m| m.row == self.release.version && m.capability == capability)
    }
}
