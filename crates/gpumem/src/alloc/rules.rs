//! PyTorch's sizing rules: how a request is rounded, which pool it uses, how large a segment
//! it gets, and when a cached block is split.

// ANCHOR: sizes
/// Requests are rounded up to a multiple of this (`kMinBlockSize`).
pub const MIN_BLOCK: u64 = 512;
/// Requests up to this size use the small pool (`kSmallSize`).
pub const SMALL_SIZE: u64 = 1 << 20;
/// Segment size of the small pool (`kSmallBuffer`).
pub const SMALL_BUFFER: u64 = 2 << 20;
/// Large requests below this get a [`LARGE_BUFFER`] segment (`kMinLargeAlloc`).
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// Segment size for large requests below [`MIN_LARGE_ALLOC`] (`kLargeBuffer`).
pub const LARGE_BUFFER: u64 = 20 << 20;
/// Larger segments are rounded up to a multiple of this (`kRoundLarge`).
pub const ROUND_LARGE: u64 = 2 << 20;
// ANCHOR_END: sizes

/// Where the allocator's address space starts (addresses are the allocator's own, the same
/// on every backing, so traces compare across backings).
pub(super) const FIRST_ADDRESS: u64 = 1 << 40;

/// The two pools of cached blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pool {
    Small,
    Large,
}

/// The 512-byte rounding every request gets. `None` when it would overflow.
pub fn round_size(requested: u64) -> Option<u64> {
    if requested < MIN_BLOCK {
        Some(MIN_BLOCK)
    } else {
        requested.checked_next_multiple_of(MIN_BLOCK)
    }
}

/// The pool a rounded size is served from.
pub fn pool_for(size: u64) -> Pool {
    if size <= SMALL_SIZE {
        Pool::Small
    } else {
        Pool::Large
    }
}

// ANCHOR: segment_size
/// The segment the allocator asks the device for when no cached block fits
/// (`get_allocation_size`). `None` when it would overflow.
pub fn segment_size(size: u64) -> Option<u64> {
    if size <= SMALL_SIZE {
        Some(SMALL_BUFFER)
    } else if size < MIN_LARGE_ALLOC {
        Some(LARGE_BUFFER)
    } else {
        size.checked_next_multiple_of(ROUND_LARGE)
    }
}
// ANCHOR_END: segment_size

/// Whether a block of `block_size` serving a request of `size` is split, leaving the rest
/// as a free block (`should_split`). With expandable segments every pool splits as the
/// small one does: a segment's free pages can be unmapped whatever is split off.
pub fn should_split(
    size: u64,
    block_size: u64,
    max_split_size: Option<u64>,
    expandable_segments: bool,
) -> bool {
    let remaining = block_size - size;
    match pool_for(size) {
        _ if expandable_segments => remaining >= MIN_BLOCK,
        Pool::Small => remaining >= MIN_BLOCK,
        Pool::Large => max_split_size.is_none_or(|m| size < m) && remaining > SMALL_SIZE,
    }
}

/// Page size of an expandable segment of `pool`: 2 MiB pages for the small pool and
/// 20 MiB for the large one (PyTorch maps pages of `kSmallBuffer` / `kLargeBuffer`).
pub fn page_size(pool: Pool) -> u64 {
    match pool {
        Pool::Small => SMALL_BUFFER,
        Pool::Large => LARGE_BUFFER,
    }
}
