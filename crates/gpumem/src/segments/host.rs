//! Host memory for the `cpu` backing: zeroed, fallible, and committed lazily by the OS,
//! so an emulated 16 GiB card costs only the pages a run touches.

use crate::alloc::{SegmentStore, StoreError};
use std::alloc::Layout;
use std::collections::HashMap;
use std::ptr::NonNull;

/// Alignment of every host segment: a cache line, and more than any element type needs.
const ALIGN: usize = 64;

/// The layout of a host segment of `bytes` (at least one byte), or why there is none.
fn layout(bytes: u64) -> Result<Layout, StoreError> {
    usize::try_from(bytes.max(1))
        .ok()
        .and_then(|size| Layout::from_size_align(size, ALIGN).ok())
        .ok_or_else(|| StoreError::OutOfMemory(format!("{bytes} bytes exceed the address space")))
}

/// The error for a host allocation the system refused.
fn refused(bytes: u64) -> StoreError {
    StoreError::OutOfMemory(format!(
        "host allocation of {} failed",
        crate::size::format_bytes(bytes)
    ))
}

/// One zero-initialised host allocation. Owned; freed on drop.
pub(crate) struct HostSegment {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl HostSegment {
    /// Allocates `bytes` of zeroed memory, or says why not. Never aborts the process on
    /// failure (unlike `vec![0; n]`), so running out of host memory is an error value.
    fn new(bytes: u64) -> Result<Self, StoreError> {
        let layout = layout(bytes)?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| refused(bytes))?;
        Ok(Self { ptr, layout })
    }

    fn len(&self) -> usize {
        self.layout.size()
    }

    /// Grows or shrinks the allocation to `bytes`, keeping its contents; new bytes are
    /// zeroed. (glibc moves large allocations with `mremap`, so growing copies nothing.)
    fn resize(&mut self, bytes: u64) -> Result<(), StoreError> {
        let layout = layout(bytes)?;
        let size = layout.size();
        let old = self.len();
        // SAFETY: `ptr` came from this allocator with `self.layout`; the new size is
        // non-zero and fits a layout of the same alignment (checked above).
        let raw = unsafe { std::alloc::realloc(self.ptr.as_ptr(), self.layout, size) };
        let ptr = NonNull::new(raw).ok_or_else(|| refused(bytes))?;
        if size > old {
            // SAFETY: the bytes from `old` to `size` lie inside the new allocation.
            unsafe { ptr.as_ptr().add(old).write_bytes(0, size - old) };
        }
        self.ptr = ptr;
        self.layout = layout;
        Ok(())
    }
}

impl Drop for HostSegment {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with this very layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// The `cpu` backing's segments.
#[derive(Default)]
pub struct HostStore {
    segments: HashMap<u64, HostSegment>,
}

impl std::fmt::Debug for HostStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStore")
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl HostStore {
    /// A raw pointer to `len` elements of `T` at `offset` bytes into `segment`.
    ///
    /// Fails (rather than reading out of bounds) if the range is not inside the segment or
    /// not aligned for `T`.
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    pub(crate) fn ptr<T>(&self, segment: u64, offset: u64, len: usize) -> Option<*mut T> {
        let seg = self.segments.get(&segment)?;
        let offset = usize::try_from(offset).ok()?;
        let bytes = len.checked_mul(size_of::<T>())?;
        if offset.checked_add(bytes)? > seg.len() || offset % align_of::<T>() != 0 {
            return None;
        }
        // SAFETY: the range lies inside the allocation, checked above.
        Some(unsafe { seg.ptr.as_ptr().add(offset) }.cast::<T>())
    }
}

impl SegmentStore for HostStore {
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError> {
        self.segments.insert(id, HostSegment::new(bytes)?);
        Ok(())
    }

    fn release_segment(&mut self, id: u64) {
        self.segments.remove(&id);
    }

    /// An expandable segment is one host allocation that covers its highest mapped page:
    /// mapping past its end grows it.
    fn map_pages(
        &mut self,
        id: u64,
        offset: u64,
        bytes: u64,
        _page: u64,
    ) -> Result<(), StoreError> {
        let end = offset.saturating_add(bytes);
        match self.segments.get_mut(&id) {
            Some(seg) if seg.len() as u64 >= end => Ok(()),
            Some(seg) => seg.resize(end),
            None => {
                self.segments.insert(id, HostSegment::new(end)?);
                Ok(())
            }
        }
    }

    /// Unmapping the highest pages shrinks the allocation; pages in the middle keep their
    /// host memory until then (the allocator's accounting does not depend on it).
    fn unmap_pages(&mut self, id: u64, offset: u64, bytes: u64) {
        if let Some(seg) = self.segments.get_mut(&id)
            && offset.saturating_add(bytes) >= seg.len() as u64
            && offset > 0
        {
            // Shrinking in place cannot fail in practice; if it does, keep the memory.
            let _ = seg.resize(offset);
        }
    }

    fn free_memory(&self) -> Option<u64> {
        meminfo("MemAvailable:")
    }

    fn total_memory(&self) -> Option<u64> {
        meminfo("MemTotal:")
    }
}

/// A figure from `/proc/meminfo` in bytes (Linux only; `None` elsewhere).
fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

// SAFETY: the store owns its allocations; access goes through `&self`/`&mut self`.
unsafe impl Send for HostSegment {}
