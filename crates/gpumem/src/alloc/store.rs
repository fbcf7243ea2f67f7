//! What holds the memory: the allocator asks a store for segments and gives them back.

/// What the allocator needs from whatever holds the memory (wgpu buffers, host memory, or
/// nothing at all).
pub trait SegmentStore {
    /// Take `bytes` of memory for segment `id`.
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError>;
    /// Give segment `id` back.
    fn release_segment(&mut self, id: u64);
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
