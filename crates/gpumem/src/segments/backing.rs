//! The segments of the backing a device opened ([`Backing`]); the choice as the user names
//! it is [`Backend`] (its own module, so that errors can name it without the device).

#[cfg(feature = "wgpu")]
use super::buffers::BufferStore;
use super::driver::DriverMemory;
#[cfg(feature = "cpu")]
use super::host::HostStore;
use crate::alloc::{SegmentStore, StoreError};
use crate::backend::Backend;

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

    /// Whether segments hold bytes, which run out where the backing's memory does (false
    /// on `plan`: only a capacity makes it run out).
    pub fn holds_data(&self) -> bool {
        !matches!(self, Backing::Plan)
    }

    /// The `cpu` backing's host memory, if this is it.
    #[cfg(feature = "cpu")]
    pub(crate) fn host(&self) -> Option<&HostStore> {
        match self {
            Backing::Cpu(s) => Some(s),
            _ => None,
        }
    }

    /// The `wgpu` backing's buffers, if this is it.
    #[cfg(feature = "wgpu")]
    pub(crate) fn buffers(&self) -> Option<&BufferStore> {
        match self {
            Backing::Wgpu(s) => Some(s),
            _ => None,
        }
    }

    /// The driver's own view of buffer memory on `wgpu` (`None` on the other backings, or
    /// where the backend cannot report it).
    pub fn driver_memory(&self) -> Option<DriverMemory> {
        match self {
            #[cfg(feature = "wgpu")]
            Backing::Wgpu(s) => s.driver_memory(),
            _ => None,
        }
    }
}

#[cfg(feature = "cpu")]
impl From<HostStore> for Backing {
    fn from(store: HostStore) -> Backing {
        Backing::Cpu(store)
    }
}

#[cfg(feature = "wgpu")]
impl From<BufferStore> for Backing {
    fn from(store: BufferStore) -> Backing {
        Backing::Wgpu(store)
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
