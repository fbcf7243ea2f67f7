//! The cuBLAS and cuBLASLt workspaces: scratch memory that PyTorch's matrix products keep for
//! the life of the process, beside the tensors. The rules are read from PyTorch's
//! `aten/src/ATen/cuda/CublasHandlePool.cpp` (`parseChosenWorkspaceSize`,
//! `parseCUDABlasLtWorkspaceSize`, `isCUDABlasWorkspaceCachingEnabled`,
//! `setupCUDABlasHandle`, `getCUDABlasLtWorkspace`); the notes, with the versions read, are in
//! `reference/notes/cublas-workspaces.md`.
//!
//! This module holds the rules: sizes per GPU generation and PyTorch version, the syntax of
//! `CUBLAS_WORKSPACE_CONFIG`, and which workspaces go through the caching allocator. A device
//! takes them in its step once set (`Device::set_cublas_workspaces`; none by default). Not yet
//! done (issue "The real card"): the estimate's term, the CLIs' flag, the card presets.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchRules {
    /// About 2.4 to 2.10: the cuBLAS workspace always goes through the caching allocator, and
    /// only Hopper (compute capability 9.0) gets 32 MiB.
    V2_10,
    /// 2.15, the version this project's fixtures name: workspace caching is off by default on
    /// CUDA (`TORCH_CUBLAS_WORKSPACE_CACHE`), and majors 9–12 get 32 MiB when it is on.
    V2_15,
}

/// The default cuBLAS workspace for a card of compute capability `major.minor`.
pub fn default_cublas_workspace(rules: TorchRules, major: u32, minor: u32) -> u64 {
    let large = match rules {
        TorchRules::V2_10 => major == 9 && minor == 0,
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
    /// The backward pass, on autograd's device thread.
    Autograd,
}

/// One workspace a process holds once its handle has run a matrix product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workspace {
    pub handle: Handle,
    /// cuBLASLt's (`getCUDABlasLtWorkspace`) rather than cuBLAS's.
    pub lt: bool,
    pub bytes: u64,
    /// Taken from PyTorch's caching allocator (counted in `memory_allocated()`), or by the
    /// library itself, outside it (seen only as memory the driver no longer has free).
    pub through_allocator: bool,
}

/// The workspaces a step's handles hold under `rules`: `cached` is
/// `TORCH_CUBLAS_WORKSPACE_CACHE=1` (always so before 2.15), `lt_handles` the handles whose
/// products take the cuBLASLt path (e.g. `addmm` with a bias, through `gemm_and_bias`).
pub fn step_workspaces(
    rules: TorchRules,
    cached: bool,
    cublas: u64,
    lt: u64,
    lt_handles: &[Handle],
) -> Vec<Workspace> {
    let cached = cached || rules == TorchRules::V2_10;
    let mut out = Vec::new();
    for handle in [Handle::Main, Handle::Autograd] {
        let uses_lt = lt_handles.contains(&handle);
        out.push(Workspace {
            handle,
            lt: false,
            bytes: cublas,
            through_allocator: cached,
        });
        // 2.15 with caching shares one workspace between the two libraries (unified, its
        // default then); without caching, and before 2.15, cuBLASLt takes its own.
        let unified = cached && rules == TorchRules::V2_15;
        if uses_lt && !unified {
            out.push(Workspace {
                handle,
                lt: true,
                bytes: lt,
                through_allocator: true,
            });
        }
    }
    out
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
        for rules in [TorchRules::V2_10, TorchRules::V2_15] {
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

    /// Hand-computed: a step on an Ampere card, the forward `addmm` on the cuBLASLt path.
    #[test]
    fn a_step_holds_a_workspace_per_handle() {
        let pre = 8_519_680;
        let lt = DEFAULT_LT_WORKSPACE;
        // Before 2.15: both handles' cuBLAS workspaces through the allocator, and the main
        // thread's cuBLASLt workspace beside its own.
        let old = step_workspaces(TorchRules::V2_10, false, pre, lt, &[Handle::Main]);
        let through: u64 = old
            .iter()
            .filter(|w| w.through_allocator)
            .map(|w| w.bytes)
            .sum();
        assert_eq!(old.len(), 3);
        assert_eq!(through, 2 * pre + lt);
        // 2.15's default: cuBLAS keeps its own (outside), only cuBLASLt's goes through.
        let new = step_workspaces(TorchRules::V2_15, false, pre, lt, &[Handle::Main]);
        let (inside, outside): (Vec<&Workspace>, Vec<&Workspace>) =
            new.iter().partition(|w| w.through_allocator);
        assert_eq!(inside.iter().map(|w| w.bytes).sum::<u64>(), lt);
        assert_eq!(outside.iter().map(|w| w.bytes).sum::<u64>(), 2 * pre);
        // 2.15 with TORCH_CUBLAS_WORKSPACE_CACHE=1: unified, two workspaces through.
        let cached = step_workspaces(TorchRules::V2_15, true, pre, lt, &[Handle::Main]);
        assert_eq!(cached.len(), 2);
        assert!(cached.iter().all(|w| w.through_allocator && !w.lt));
    }
}
