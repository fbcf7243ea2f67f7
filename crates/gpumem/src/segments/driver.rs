//! Buffer memory as the driver sees it, beside the allocator's own figures: a backing's
//! answer (only `wgpu` has one), so it is in every build.

/// Buffer memory as the wgpu driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DriverMemory {
    /// Bytes in all live allocations, including wgpu's own internal buffers.
    pub allocated: u64,
    /// Bytes in the driver's memory blocks (allocations are sub-allocated from these).
    pub reserved: u64,
    /// Bytes in the driver's allocations for this engine's segment buffers (each may be
    /// padded to the driver's memory alignment).
    pub segments: u64,
    /// Number of those buffers.
    pub buffers: u64,
}
