//! What holds the memory: the allocator asks a store for segments and gives them back.

/// What the allocator needs from whatever holds the memory (wgpu buffers, host memory, or
/// nothing at all).
pub trait SegmentStore {
    /// Take `bytes` of memory for segment `id`.
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError>;
    /// Give segment `id` back.
    fn release_segment(&mut self, id: u64);
    /// Back `bytes` at `offset` of expandable segment `id` with memory: whole pages of
    /// `page` bytes (the segment exists from its first mapping on).
    fn map_pages(&mut self, id: u64, offset: u64, bytes: u64, page: u64) -> Result<(), StoreError> {
        let _ = (id, offset, bytes, page);
        Ok(())
    }
    /// Give the memory under `bytes` at `offset` of expandable segment `id` back.
    fn unmap_pages(&mut self, id: u64, offset: u64, bytes: u64) {
        let _ = (id, offset, bytes);
    }
    /// Free bytes the store knows of, for reports when there is no emulated capacity.
    fn free_memory(&self) -> Option<u64> {
        None
    }
    /// Total bytes the store knows of, for reports when there is no emulated capacity.
    fn total_memory(&self) -> Option<u64> {
        None
    }
}

/// A store's refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The memory is not there; the allocator may free its cache and retry.
    #[error("{0}")]
    OutOfMemory(String),
    /// The device is gone or broken; retrying cannot help.
    #[error("{0}")]
    Fatal(String),
}
