//! The cuBLAS and cuBLASLt workspaces: scratch memory that PyTorch's matrix products keep for
//! the life of the process, beside the tensors. The rules are read from PyTorch's
//! `aten/src/ATen/cuda/CublasHandlePool.cpp` (`parseChosenWorkspaceSize`,
//! `parseCUDABlasLtWorkspaceSize`, `isCUDABlasWorkspaceCachingEnabled`,
//! `setupCUDABlasHandle`, `getCUDABlasLtWorkspace`); the notes, with the versions read, are in
//! `reference/notes/cublas-workspaces.md`.
//!
//! This module holds the rules: sizes per GPU generation and PyTorch version, the syntax of
//! `CUBLAS_WORKSPACE_CONFIG`, and which workspaces go through the caching allocator. A device
//! takes them in its step once set (`DeviceOptions::cublas`; none by default).

use crate::size::{SizeError, parse_bytes};
use std::str::FromStr;

/// 1 KiB, the unit of both environment variables.
const KIB: u64 = 1024;

/// PyTorch's default before Hopper, `CUBLAS_WORKSPACE_CONFIG=:4096:2:16:8`: two 4 MiB chunks
/// and eight of 16 KiB, 8,519,680 B.
pub const DEFAULT_CONFIG: &str = ":4096:2:16:8";

/// The default on the generations PyTorch gives 32 MiB (`4096 * 8 * 1024`).
pub const LARGE_WORKSPACE: u64 = 4096 * 8 * KIB;

/// cuBLASLt's default, `CUBLASLT_WORKSPACE_SIZE=1024` (KiB), on every CUDA generation.
pub const DEFAULT_LT_WORKSPACE: u64 = 1024 * KIB;

/// Which PyTorch's rules: they changed with the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TorchRules {
    /// 1.13 to about 2.7: each handle's cuBLAS workspace through the caching allocator, and
    /// cuBLASLt's allocated for each call and freed after it (`CUDABlas.cpp`'s
    /// `gemm_and_bias`). 1.12 and before have no workspace code (`versions::Workspaces`).
    V2_0,
    /// About 2.8 to 2.10: as 2.0, but cuBLASLt keeps one workspace per handle
    /// (PyTorch PR 156495, "persistent workspace").
    V2_10,
    /// 2.15, the version this project's fixtures name: workspace caching is off by default on
    /// CUDA (`TORCH_CUBLAS_WORKSPACE_CACHE`), so cuBLAS keeps its own workspace outside the
    /// allocator, and majors 9–12 get 32 MiB when it is on.
    V2_15,
}

/// The default cuBLAS workspace for a card of compute capability `major.minor`.
pub fn default_cublas_workspace(rules: TorchRules, major: u32, minor: u32) -> u64 {
    let large = match rules {
        TorchRules::V2_0 | TorchRules::V2_10 => major == 9 && minor == 0,
        TorchRules::V2_15 => (9..=12).contains(&major),
    };
    if large {
        LARGE_WORKSPACE
    } else {
        parse_workspace_config(DEFAULT_CONFIG).expect("the default parses")
    }
}

/// Why a workspace setting could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error(
        "`{0}` has no `:SIZE:COUNT` pair (SIZE in KiB), as CUBLAS_WORKSPACE_CONFIG writes them, \
         e.g. `{DEFAULT_CONFIG}` (PyTorch would warn and use its default; this program stops)"
    )]
    NoPair(String),
    #[error("`{0}` adds up to more bytes than this program can count")]
    Overflow(String),
    #[error("`{0}` adds up to zero bytes: write `off` for no workspace")]
    Zero(String),
    #[error(
        "`{0}` is not a workspace: expected `off`, a size such as `8MiB`, or \
         CUBLAS_WORKSPACE_CONFIG's `:SIZE:COUNT` pairs such as `{DEFAULT_CONFIG}`: {1}"
    )]
    NotASize(String, SizeError),
}

/// The bytes `CUBLAS_WORKSPACE_CONFIG` asks for: every `:SIZE:COUNT` pair (SIZE in KiB) found
/// in the text, summed, as PyTorch's regex `:([0-9]+):([0-9]+)` finds them; other text is
/// skipped, as PyTorch skips it.
pub fn parse_workspace_config(text: &str) -> Result<u64, WorkspaceError> {
    let overflow = || WorkspaceError::Overflow(text.to_string());
    let bytes = text.as_bytes();
    let digits = |from: usize| {
        let end = bytes[from..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(bytes.len(), |n| from + n);
        (end > from).then_some(end)
    };
    let (mut total, mut pairs, mut at) = (0u64, 0, 0);
    while at < bytes.len() {
        let pair = (bytes[at] == b':')
            .then(|| digits(at + 1))
            .flatten()
            .filter(|&end| bytes.get(end) == Some(&b':'))
            .and_then(|mid| digits(mid + 1).map(|end| (mid, end)));
        let Some((mid, end)) = pair else {
            at += 1;
            continue;
        };
        let size: u64 = text[at + 1..mid].parse().map_err(|_| overflow())?;
        let count: u64 = text[mid + 1..end].parse().map_err(|_| overflow())?;
        let chunk = size
            .checked_mul(KIB)
            .and_then(|b| b.checked_mul(count))
            .ok_or_else(overflow)?;
        total = total.checked_add(chunk).ok_or_else(overflow)?;
        pairs += 1;
        at = end;
    }
    if pairs == 0 {
        return Err(WorkspaceError::NoPair(text.to_string()));
    }
    Ok(total)
}

/// A cuBLAS workspace as a user sets it: `--cublas-workspace off`, a size (`8MiB`), or
/// `CUBLAS_WORKSPACE_CONFIG`'s own syntax (`:4096:2:16:8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CublasWorkspace {
    Off,
    Bytes(u64),
}

impl FromStr for CublasWorkspace {
    type Err = WorkspaceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        let bytes = if t.eq_ignore_ascii_case("off") {
            return Ok(Self::Off);
        } else if t.starts_with(':') {
            parse_workspace_config(t)?
        } else {
            parse_bytes(t).map_err(|e| WorkspaceError::NotASize(text.to_string(), e))?
        };
        if bytes == 0 {
            return Err(WorkspaceError::Zero(text.to_string()));
        }
        Ok(Self::Bytes(bytes))
    }
}

/// The thread a matrix product runs on. PyTorch's handles are per thread (a `thread_local`
/// `PoolWindow` in `getCurrentCUDABlasHandle`), and autograd runs a CUDA backward pass on its
/// own device thread (`Engine::thread_init`), so a training step uses two handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handle {
    /// The forward pass and the optimizer, on the Python thread.
    Main,
    /// The backward pass (recomputed forward passes included), on autograd's device thread.
    Autograd,
}

/// Which library's workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    Cublas,
    /// cuBLASLt's (`getCUDABlasLtWorkspace`), taken by products that go through it: `addmm`
    /// with a bias vector (`gemm_and_bias`), i.e. `nn.Linear`'s forward pass.
    CublasLt,
}

/// The workspaces a device's matrix products take through its caching allocator (counted in
/// `memory_allocated()`); what a library keeps outside the allocator is memory outside it,
/// like the CUDA context's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkspaceRules {
    /// Each handle's cuBLAS workspace, taken by its first product of either kind
    /// (`getCurrentCUDABlasHandle` sets the handle up for cuBLASLt too); 0 for none.
    pub cublas: u64,
    /// cuBLASLt's own workspace, taken by a handle's first cuBLASLt product; 0 for none (or
    /// shared with cuBLAS's, "unified").
    pub lt: u64,
    /// cuBLASLt's workspace is allocated for each call and freed after it (before ≈2.8).
    pub lt_per_call: bool,
}

impl WorkspaceRules {
    /// A tensors-only card: nothing but tensors in the allocator.
    pub const NONE: Self = Self {
        cublas: 0,
        lt: 0,
        lt_per_call: false,
    };

    /// The workspaces under `rules` for a cuBLAS workspace of `cublas` bytes and a cuBLASLt
    /// one of `lt`; `cached` is `TORCH_CUBLAS_WORKSPACE_CACHE=1` (what 2.15 does without it
    /// is what earlier versions always did).
    pub fn for_torch(rules: TorchRules, cached: bool, cublas: u64, lt: u64) -> Self {
        match rules {
            TorchRules::V2_0 => Self {
                cublas,
                lt,
                lt_per_call: true,
            },
            TorchRules::V2_10 => Self {
                cublas,
                lt,
                lt_per_call: false,
            },
            // Cached: cuBLASLt shares the handle's workspace, grown to the larger size
            // ("unified", its default then).
            TorchRules::V2_15 if cached => Self {
                cublas: cublas.max(lt),
                lt: 0,
                lt_per_call: false,
            },
            // Not cached: cuBLAS's own workspace, outside the allocator.
            TorchRules::V2_15 => Self {
                cublas: 0,
                lt,
                lt_per_call: false,
            },
        }
    }

    /// Whether products take anything through the allocator.
    pub fn is_none(&self) -> bool {
        self.cublas == 0 && self.lt == 0
    }

    /// The same rules with `cublas` bytes for cuBLAS's workspace (`--cublas-workspace`), or
    /// none at all for `off`.
    pub fn with_cublas(self, setting: CublasWorkspace) -> Self {
        match setting {
            CublasWorkspace::Off => Self::NONE,
            CublasWorkspace::Bytes(cublas) => Self { cublas, ..self },
        }
    }

    /// What a product on `handle` takes, given what the handles already hold: `(library,
    /// bytes, kept)` in the order PyTorch allocates them; `kept` is false for a per-call
    /// workspace, freed when the product ends.
    pub fn taken(
        &self,
        lt_product: bool,
        holds: impl Fn(Library) -> bool,
    ) -> Vec<(Library, u64, bool)> {
        let mut out = Vec::new();
        if self.cublas > 0 && !holds(Library::Cublas) {
            out.push((Library::Cublas, self.cublas, true));
        }
        if lt_product && self.lt > 0 && (self.lt_per_call || !holds(Library::CublasLt)) {
            out.push((Library::CublasLt, self.lt, !self.lt_per_call));
        }
        out
    }
}

/// The label a workspace's block carries in traces, snapshots and messages.
pub fn label(library: Library, handle: Handle) -> String {
    let library = match library {
        Library::Cublas => "cublas_workspace",
        Library::CublasLt => "cublaslt_workspace",
    };
    let thread = match handle {
        Handle::Main => "main thread",
        Handle::Autograd => "autograd thread",
    };
    format!("{library} ({thread})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_config_is_eight_and_an_eighth_mib() {
        // 4096 KiB × 2 + 16 KiB × 8, by hand.
        assert_eq!(parse_workspace_config(DEFAULT_CONFIG), Ok(8_519_680));
        assert_eq!(8_519_680, 4_194_304 * 2 + 16_384 * 8);
    }

    #[test]
    fn pairs_are_found_anywhere_and_summed() {
        assert_eq!(parse_workspace_config(":16:8"), Ok(131_072));
        assert_eq!(parse_workspace_config("x:1:1y:2:3"), Ok(1024 + 6 * 1024));
        assert_eq!(parse_workspace_config(":4096:8"), Ok(LARGE_WORKSPACE));
    }

    #[test]
    fn a_config_without_pairs_or_too_large_is_an_error() {
        for bad in ["", "4096", ":4096", "::", ":a:1", "4096:2"] {
            assert!(
                matches!(parse_workspace_config(bad), Err(WorkspaceError::NoPair(_))),
                "{bad}"
            );
        }
        let huge = format!(":{}:2", u64::MAX / 1024);
        assert!(matches!(
            parse_workspace_config(&huge),
            Err(WorkspaceError::Overflow(_))
        ));
        assert!(matches!(
            parse_workspace_config(":99999999999999999999999:1"),
            Err(WorkspaceError::Overflow(_))
        ));
    }

    #[test]
    fn defaults_per_generation_and_version() {
        let pre = 8_519_680;
        // Ampere (8.0), Ada (8.9): the same everywhere.
        for rules in [TorchRules::V2_0, TorchRules::V2_10, TorchRules::V2_15] {
            assert_eq!(default_cublas_workspace(rules, 8, 0), pre);
            assert_eq!(default_cublas_workspace(rules, 8, 9), pre);
            assert_eq!(default_cublas_workspace(rules, 9, 0), 33_554_432);
        }
        // Blackwell (10.0, 12.0): 32 MiB only in 2.15's rules.
        assert_eq!(default_cublas_workspace(TorchRules::V2_10, 10, 0), pre);
        assert_eq!(
            default_cublas_workspace(TorchRules::V2_15, 10, 0),
            33_554_432
        );
        assert_eq!(
            default_cublas_workspace(TorchRules::V2_15, 12, 0),
            33_554_432
        );
    }

    #[test]
    fn the_flag_takes_off_a_size_or_the_config() {
        assert_eq!("off".parse(), Ok(CublasWorkspace::Off));
        assert_eq!("OFF".parse(), Ok(CublasWorkspace::Off));
        assert_eq!("8MiB".parse(), Ok(CublasWorkspace::Bytes(8 << 20)));
        assert_eq!(
            DEFAULT_CONFIG.parse(),
            Ok(CublasWorkspace::Bytes(8_519_680))
        );
        assert!(matches!(
            "0".parse::<CublasWorkspace>(),
            Err(WorkspaceError::Zero(_))
        ));
        assert!(matches!(
            ":0:4".parse::<CublasWorkspace>(),
            Err(WorkspaceError::Zero(_))
        ));
        for bad in ["-8MiB", "8 parsecs", "eight"] {
            assert!(
                matches!(
                    bad.parse::<CublasWorkspace>(),
                    Err(WorkspaceError::NotASize(..))
                ),
                "{bad}"
            );
        }
    }

    /// Hand-computed: a handle's first `addmm` with a bias (a cuBLASLt product) and its
    /// second, under each version's rules on an Ampere card.
    #[test]
    fn what_a_handles_products_take() {
        let pre = 8_519_680;
        let lt = DEFAULT_LT_WORKSPACE;
        let none = |_| false;
        let all = |_| true;
        // 2.0: cuBLAS's workspace once, cuBLASLt's on every call and given back.
        let old = WorkspaceRules::for_torch(TorchRules::V2_0, false, pre, lt);
        assert_eq!(
            old.taken(true, none),
            [(Library::Cublas, pre, true), (Library::CublasLt, lt, false)]
        );
        assert_eq!(old.taken(true, all), [(Library::CublasLt, lt, false)]);
        assert_eq!(old.taken(false, none), [(Library::Cublas, pre, true)]);
        // 2.10: both kept, each once.
        let mid = WorkspaceRules::for_torch(TorchRules::V2_10, false, pre, lt);
        assert_eq!(mid.taken(true, none).len(), 2);
        assert!(mid.taken(true, all).is_empty());
        // 2.15's default: only cuBLASLt's 1 MiB, and only for cuBLASLt products.
        let new = WorkspaceRules::for_torch(TorchRules::V2_15, false, pre, lt);
        assert_eq!(new.taken(true, none), [(Library::CublasLt, lt, true)]);
        assert!(new.taken(false, none).is_empty());
        // 2.15 with TORCH_CUBLAS_WORKSPACE_CACHE=1: one shared workspace per handle.
        let cached = WorkspaceRules::for_torch(TorchRules::V2_15, true, pre, lt);
        assert_eq!(cached.taken(true, none), [(Library::Cublas, pre, true)]);
        // The flag: a size replaces cuBLAS's, `off` takes everything away.
        assert_eq!(
            old.with_cublas(CublasWorkspace::Bytes(1 << 20)).cublas,
            1 << 20
        );
        assert!(old.with_cublas(CublasWorkspace::Off).is_none());
        assert!(label(Library::CublasLt, Handle::Autograd).contains("autograd"));
    }
}
