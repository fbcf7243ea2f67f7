//! Data in and out of wgpu segments, which may be made of several buffers: the executor's
//! work, since each transfer joins (or first submits) the step's pending commands.

use super::gpu::GpuExecutor;
use crate::error::Error;
use crate::segments::{BufferStore, parts};
use gpumem_kernels::counters::Counter;

/// Copies `len` bytes of a tensor back to the host and waits for them.
pub(crate) fn read_back<T: bytemuck::Pod>(
    store: &BufferStore,
    exec: &GpuExecutor,
    segment: u64,
    offset: u64,
    len: u64,
) -> Result<Vec<T>, Error> {
    let gpu = &store.gpu;
    // Copies move whole 4-byte words; the block is 512-byte rounded, so reading up to the
    // next word stays inside it.
    let padded = len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
    let staging = exec.staging(padded.max(4));
    // The copy joins the pending commands: the step and its read-back are one submission.
    let runs = parts(store, segment, offset, padded)?;
    // The copy cannot join the kernels' open compute pass.
    exec.step_cache().end_pass();
    exec.record(|encoder| {
        for part in runs {
            encoder.copy_buffer_to_buffer(
                part.buffer,
                part.offset,
                &staging,
                part.start - offset,
                part.len,
            );
        }
        Ok(())
    })?;
    let started = std::time::Instant::now();
    exec.flush()?;
    let submitted = std::time::Instant::now();
    exec.count(Counter::SubmitNs, (submitted - started).as_nanos() as u64);
    exec.count(Counter::ReadBack, 1);
    let slice = staging.slice(..padded.max(4));
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    gpu.wait()
        .map_err(|e| Error::Device(format!("waiting for the GPU: {e}")))?;
    rx.recv()
        .map_err(|e| Error::Device(format!("read-back never completed: {e}")))?
        .map_err(|e| Error::Device(format!("mapping the read-back buffer: {e}")))?;
    exec.count(Counter::WaitNs, submitted.elapsed().as_nanos() as u64);
    let view = slice
        .get_mapped_range()
        .map_err(|e| Error::Device(format!("mapping the read-back buffer: {e}")))?;
    let out = bytemuck::pod_collect_to_vec(&view[..len as usize]);
    drop(view);
    staging.unmap();
    exec.check()?;
    Ok(out)
}

/// Writes `data` at `offset` of `segment` through the queue (padded to whole words).
pub(crate) fn write(
    store: &BufferStore,
    exec: &GpuExecutor,
    segment: u64,
    offset: u64,
    data: &[u8],
) -> Result<(), Error> {
    // Queue writes run before the commands of the next submission: submit what is
    // recorded first, so a block freed and reused within a step (the next micro-batch's
    // input, say) is not overwritten before the kernels that still read it have run.
    exec.flush()?;
    let padded;
    let data = if data.len().is_multiple_of(4) {
        data
    } else {
        padded = [data, &[0u8; 3][..4 - data.len() % 4]].concat();
        &padded[..]
    };
    for part in parts(store, segment, offset, data.len() as u64)? {
        let start = (part.start - offset) as usize;
        store.gpu.queue.write_buffer(
            part.buffer,
            part.offset,
            &data[start..start + part.len as usize],
        );
        exec.count(Counter::BufferWrite, 1);
    }
    Ok(())
}
