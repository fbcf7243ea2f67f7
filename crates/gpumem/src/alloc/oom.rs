//! The out-of-memory error, worded like PyTorch's so the lesson's message can be read
//! number by number.

use crate::size::format_bytes;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why the last attempt to get a segment failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum OomCause {
    /// The emulated card's capacity would have been exceeded.
    Capacity,
    /// The backing itself refused (host memory or the GPU driver); the text is its own.
    Backing(String),
}

/// A request the allocator could not serve, with the figures PyTorch prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct OutOfMemory {
    /// What the memory was for (`z1`, `layer3.weight`, …).
    pub label: String,
    /// Bytes asked for.
    pub requested: u64,
    /// Bytes of the segment the allocator tried to take from the device (what PyTorch calls
    /// "Tried to allocate": the request rounded to the allocator's segment sizes).
    pub tried: u64,
    /// The device's total capacity, when it is known.
    pub capacity: Option<u64>,
    /// `memory_allocated()` when it failed.
    pub allocated: u64,
    /// `memory_reserved()` when it failed.
    pub reserved: u64,
    /// Free bytes on the device, when known (on an emulated card: capacity − reserved).
    pub free: Option<u64>,
    /// Where the device is, e.g. `emulated card on cpu`.
    pub device: String,
    pub cause: OomCause,
}

impl OutOfMemory {
    /// Reserved but unallocated bytes: the cache that could not be used for this request.
    pub fn cached_unused(&self) -> u64 {
        self.reserved.saturating_sub(self.allocated)
    }

    /// True when the cache held more free bytes than the request, yet none of its blocks
    /// could serve it: the memory is fragmented.
    pub fn is_fragmentation(&self) -> bool {
        self.cached_unused() >= self.requested
    }
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or_else(|| "unknown".to_string(), format_bytes)
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "out of memory. Tried to allocate {} ({}; {} total capacity; {} already allocated; \
             {} free; {} reserved in total by gpumem)",
            format_bytes(self.tried),
            self.device,
            opt_bytes(self.capacity),
            format_bytes(self.allocated),
            opt_bytes(self.free),
            format_bytes(self.reserved),
        )?;
        if let OomCause::Backing(why) = &self.cause {
            write!(f, "\n  the device refused: {why}")?;
        }
        if self.is_fragmentation() {
            write!(
                f,
                "\n  Reserved memory is much larger than allocated memory: {} is cached but \
                 unallocated, more than this request, yet no free block is large enough. The \
                 cache is fragmented: try max_split_size (PyTorch's max_split_size_mb) or \
                 empty_cache() between phases.",
                format_bytes(self.cached_unused())
            )?;
        }
        write!(
            f,
            "\n  To fit: use a smaller batch, fewer or narrower layers, mixed precision, \
             gradient accumulation or activation checkpointing."
        )
    }
}
