//! The `wgpu` backing's segments: wgpu buffers, split into several buffers when a segment
//! is larger than the adapter's `max_buffer_size`.

use super::driver::DriverMemory;
use crate::alloc::{SegmentStore, StoreError};
use crate::error::Error;
use gpumem_kernels::gpu::Gpu;
use std::collections::HashMap;
use std::rc::Rc;

/// How segment buffers are labelled, so the driver's report can tell them from wgpu's own.
const SEGMENT_LABEL: &str = "gpumem segment";

/// Told of each buffer the store lets go, before it goes: what keeps views of the store's
/// buffers (the executor's bind groups) drops them with it, so none keeps a buffer alive.
pub(crate) type OnRelease = Box<dyn Fn(&wgpu::Buffer)>;

/// The buffers of one segment, in address order; every buffer but the last holds exactly
/// `piece` bytes.
struct SegmentBuffers {
    /// `None` for the unmapped pages of an expandable segment.
    pub buffers: Vec<Option<wgpu::Buffer>>,
    pub piece: u64,
}

pub struct BufferStore {
    gpu: Rc<Gpu>,
    segments: HashMap<u64, SegmentBuffers>,
    /// Who hears of released buffers (see [`OnRelease`]); nobody until a device's
    /// executor asks.
    on_release: Option<OnRelease>,
    /// Bytes per buffer: the adapter's `max_buffer_size`, rounded down to the allocator's
    /// 512-byte granularity so no block starts mid-element.
    piece: u64,
}

impl std::fmt::Debug for BufferStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferStore")
            .field("adapter", &self.gpu.info().name)
            .field("segments", &self.segments.len())
            .field("piece", &self.piece)
            .finish()
    }
}

impl BufferStore {
    pub fn new(gpu: Rc<Gpu>) -> Self {
        Self::with_max_buffer(Rc::clone(&gpu), gpu.limits().max_buffer_size)
    }

    /// A store that never makes a buffer larger than `max_buffer` (tests use a small value
    /// to exercise segments made of several buffers).
    pub fn with_max_buffer(gpu: Rc<Gpu>, max_buffer: u64) -> Self {
        let piece = (max_buffer.min(gpu.limits().max_buffer_size) / 512 * 512).max(512);
        Self {
            gpu,
            segments: HashMap::new(),
            on_release: None,
            piece,
        }
    }

    /// A new, empty store on the same GPU with the same buffer size.
    pub fn fresh(&self) -> Self {
        Self::with_max_buffer(Rc::clone(&self.gpu), self.piece)
    }

    pub fn gpu(&self) -> &Rc<Gpu> {
        &self.gpu
    }

    /// From now on, tells `f` of each buffer released (replacing whoever was told before).
    pub(crate) fn on_release(&mut self, f: OnRelease) {
        self.on_release = Some(f);
    }

    /// The driver's own view of buffer memory, where the backend can report it.
    pub(crate) fn driver_memory(&self) -> Option<DriverMemory> {
        let report = self.gpu.device.generate_allocator_report()?;
        let ours = || {
            report
                .allocations
                .iter()
                .filter(|a| a.name.starts_with(SEGMENT_LABEL))
        };
        Some(DriverMemory {
            allocated: report.total_allocated_bytes,
            reserved: report.total_reserved_bytes,
            segments: ours().map(|a| a.size).sum(),
            buffers: ours().count() as u64,
        })
    }

    /// Creates one buffer, turning a driver out-of-memory or validation failure into an
    /// error value instead of a panic.
    fn create_buffer(&self, id: u64, size: u64) -> Result<wgpu::Buffer, StoreError> {
        let device = &self.gpu.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&format!("{SEGMENT_LABEL} {id}")),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // Pop the innermost scope first.
        let validation = pollster::block_on(validation.pop());
        let oom = pollster::block_on(oom.pop());
        if let Some(e) = oom.or(validation) {
            buffer.destroy();
            return Err(StoreError::OutOfMemory(format!(
                "wgpu could not create a buffer: {e}"
            )));
        }
        Ok(buffer)
    }
}

impl SegmentStore for BufferStore {
    fn create_segment(&mut self, id: u64, bytes: u64) -> Result<(), StoreError> {
        if self.gpu.is_lost() {
            return Err(StoreError::Fatal("the GPU device was lost".into()));
        }
        let mut buffers = Vec::new();
        let mut left = bytes;
        while left > 0 {
            let size = left.min(self.piece);
            // On failure the buffers made so far are dropped, which frees them.
            buffers.push(Some(self.create_buffer(id, size)?));
            left -= size;
        }
        self.segments.insert(
            id,
            SegmentBuffers {
                buffers,
                piece: self.piece,
            },
        );
        Ok(())
    }

    fn release_segment(&mut self, id: u64) {
        // Dropping a buffer frees it once the GPU has finished any work that uses it; the
        // bind groups that bind it go first, so none keeps it alive.
        if let Some(seg) = self.segments.remove(&id) {
            seg.buffers
                .iter()
                .flatten()
                .for_each(|b| released(&self.on_release, b));
        }
    }

    /// An expandable segment's pages are buffers of one page each (or equal parts of a
    /// page where the adapter's buffers are smaller), made when mapped.
    fn map_pages(&mut self, id: u64, offset: u64, bytes: u64, page: u64) -> Result<(), StoreError> {
        if self.gpu.is_lost() {
            return Err(StoreError::Fatal("the GPU device was lost".into()));
        }
        let piece = page_piece(page, self.piece);
        let (first, end) = (offset / piece, (offset + bytes).div_ceil(piece));
        // On failure the buffers made so far are dropped, which frees them.
        let made = (first..end)
            .map(|_| self.create_buffer(id, piece))
            .collect::<Result<Vec<_>, _>>()?;
        let seg = self.segments.entry(id).or_insert_with(|| SegmentBuffers {
            buffers: Vec::new(),
            piece,
        });
        let end = end as usize;
        if seg.buffers.len() < end {
            seg.buffers.resize_with(end, || None);
        }
        for (slot, b) in seg.buffers[first as usize..end].iter_mut().zip(made) {
            *slot = Some(b);
        }
        Ok(())
    }

    fn unmap_pages(&mut self, id: u64, offset: u64, bytes: u64) {
        let Some(seg) = self.segments.get_mut(&id) else {
            return;
        };
        let (first, end) = (offset / seg.piece, (offset + bytes).div_ceil(seg.piece));
        let end = (end as usize).min(seg.buffers.len());
        for slot in seg.buffers.iter_mut().take(end).skip(first as usize) {
            if let Some(b) = slot.take() {
                released(&self.on_release, &b);
            }
        }
        while seg.buffers.last().is_some_and(Option::is_none) {
            seg.buffers.pop();
        }
    }
}

/// Tells whoever asked (`on_release`) that `buffer` goes.
fn released(on_release: &Option<OnRelease>, buffer: &wgpu::Buffer) {
    if let Some(f) = on_release {
        f(buffer);
    }
}

/// One contiguous run of a tensor's bytes inside one wgpu buffer.
pub(crate) struct PartRef<'a> {
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset inside `buffer`.
    pub offset: u64,
    pub len: u64,
    /// Byte offset of this run inside the segment.
    pub start: u64,
}

/// The runs covering `len` bytes at `offset` of `segment`, in order.
pub(crate) fn parts(
    store: &BufferStore,
    segment: u64,
    offset: u64,
    len: u64,
) -> Result<Vec<PartRef<'_>>, Error> {
    let seg = store
        .segments
        .get(&segment)
        .ok_or_else(|| Error::Device(format!("segment {segment} has no buffers")))?;
    let mut out = Vec::new();
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        let index = (pos / seg.piece) as usize;
        let buffer = seg
            .buffers
            .get(index)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                Error::Device(format!("offset {pos} of segment {segment} is not mapped"))
            })?;
        let inner = pos % seg.piece;
        let n = (seg.piece - inner)
            .min(end - pos)
            .min(buffer.size() - inner);
        out.push(PartRef {
            buffer,
            offset: inner,
            len: n,
            start: pos,
        });
        pos += n;
    }
    Ok(out)
}

/// The largest part of a `page` that is a multiple of 512 B, divides the page evenly and
/// fits a buffer of `max` bytes: pages are whole numbers of buffers, so no buffer spans two
/// pages that are mapped and unmapped apart.
fn page_piece(page: u64, max: u64) -> u64 {
    (1..=page / 512)
        .map(|parts| page / parts)
        .find(|&p| p <= max && page.is_multiple_of(p) && p.is_multiple_of(512))
        .unwrap_or(512)
}

#[cfg(test)]
mod tests {
    use super::page_piece;

    const MIB: u64 = 1 << 20;

    #[test]
    fn pages_are_whole_numbers_of_buffers() {
        assert_eq!(page_piece(20 * MIB, 1 << 30), 20 * MIB);
        assert_eq!(page_piece(2 * MIB, 3 * MIB), 2 * MIB);
        // 20 MiB in buffers of at most 3 MiB: eight of 2.5 MiB.
        assert_eq!(page_piece(20 * MIB, 3 * MIB), 5 * MIB / 2);
        assert_eq!(page_piece(20 * MIB, 16 << 10), 16 << 10);
    }
}
