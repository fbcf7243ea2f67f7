//! The `wgpu` backing's segments: wgpu buffers, split into several buffers when a segment
//! is larger than the adapter's `max_buffer_size`.

use crate::alloc::{SegmentStore, StoreError};
use gpumem_kernels::gpu::Gpu;
use std::collections::HashMap;
use std::rc::Rc;

/// The buffers of one segment, in address order; every buffer but the last holds exactly
/// `piece` bytes.
/// How segment buffers are labelled, so the driver's report can tell them from wgpu's own.
pub(crate) const SEGMENT_LABEL: &str = "gpumem segment";

pub(crate) struct SegmentBuffers {
    pub buffers: Vec<wgpu::Buffer>,
    pub piece: u64,
}

pub struct BufferStore {
    pub(crate) gpu: Rc<Gpu>,
    pub(crate) segments: HashMap<u64, SegmentBuffers>,
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
            piece,
        }
    }

    pub fn gpu(&self) -> &Rc<Gpu> {
        &self.gpu
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
            buffers.push(self.create_buffer(id, size)?);
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
        // Dropping a buffer frees it once the GPU has finished any work that uses it.
        self.segments.remove(&id);
    }
}
