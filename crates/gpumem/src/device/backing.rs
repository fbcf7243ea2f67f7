//! Which backing a device runs on: the choice as the user names it ([`Backend`]), and the
//! segments of the one that was opened ([`Backing`]).

#[cfg(feature = "wgpu")]
use super::buffers::BufferStore;
#[cfg(feature = "cpu")]
use super::host::HostStore;
use crate::alloc::{SegmentStore, StoreError};
use std::fmt;
use std::str::FromStr;

/// Which backing to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// A hardware GPU through wgpu if there is one, else `cpu`.
    #[default]
    Auto,
    Wgpu,
    Cpu,
    Plan,
}

impl Backend {
    pub const NAMES: &str = "auto, wgpu, cpu or plan";
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Backend::Auto => "auto",
            Backend::Wgpu => "wgpu",
            Backend::Cpu => "cpu",
            Backend::Plan => "plan",
        })
    }
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Backend::Auto),
            "wgpu" | "gpu" => Ok(Backend::Wgpu),
            "cpu" => Ok(Backend::Cpu),
            "plan" => Ok(Backend::Plan),
            _ => Err(format!(
                "unknown backend `{s}`: expected {}",
                Backend::NAMES
            )),
        }
    }
}

/// The segments of whichever backing was chosen (only those this build has: features
/// `cpu` and `wgpu`).
#[derive(Debug)]
pub enum Backing {
    Plan,
    #[cfg(feature = "cpu")]
    Cpu(HostStore),
    #[cfg(feature = "wgpu")]
    Wgpu(BufferStore),
}

impl Backing {
    pub fn kind(&self) -> Backend {
        match self {
            Backing::Plan => Backend::Plan,
            #[cfg(feature = "cpu")]
            Backing::Cpu(_) => Backend::Cpu,
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(_) => Backend::Wgpu,
        }
    }

    /// Whether kernels run (false on `plan`, where steps are only planned).
    pub fn executes(&self) -> bool {
        !matches!(self, Backing::Plan)
    }
}

// With neither backing compiled in, only `plan` is left, which ignores the arguments.
#[cfg_attr(not(any(feature = "cpu", feature = "wgpu")), allow(unused_variables))]
impl SegmentStore for Backing {
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError> {
        match self {
            Backing::Plan => Ok(()),
            #[cfg(feature = "cpu")]
            Backing::Cpu(s) => s.create_segment(id, bytes),
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(s) => s.create_segment(id, bytes),
        }
    }

    fn release_segment(&mut self, id: u64) {
        match self {
            Backing::Plan => {}
            #[cfg(feature = "cpu")]
            Backing::Cpu(s) => s.release_segment(id),
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(s) => s.release_segment(id),
        }
    }

    fn map_pages(&mut self, id: u64, offset: u64, bytes: u64, page: u64) -> Result<(), StoreError> {
        match self {
            Backing::Plan => Ok(()),
            #[cfg(feature = "cpu")]
            Backing::Cpu(s) => s.map_pages(id, offset, bytes, page),
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(s) => s.map_pages(id, offset, bytes, page),
        }
    }

    fn unmap_pages(&mut self, id: u64, offset: u64, bytes: u64) {
        match self {
            Backing::Plan => {}
            #[cfg(feature = "cpu")]
            Backing::Cpu(s) => s.unmap_pages(id, offset, bytes),
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(s) => s.unmap_pages(id, offset, bytes),
        }
    }

    fn free_memory(&self) -> Option<u64> {
        match self {
            #[cfg(feature = "cpu")]
            Backing::Cpu(s) => s.free_memory(),
            _ => None,
        }
    }

    fn total_memory(&self) -> Option<u64> {
        match self {
            #[cfg(feature = "cpu")]
            Backing::Cpu(s) => s.total_memory(),
            _ => None,
        }
    }
}
