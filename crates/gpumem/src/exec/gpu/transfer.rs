//! Data in and out of wgpu segments, which may be made of several buffers: the executor's
//! work, since each transfer joins (or first submits) the step's pending commands.

use super::GpuExecutor;
use super::run::store;
use crate::error::Error;
use crate::exec::Memory;
use crate::exec::op::Operand;
use crate::segments::parts;
use gpumem_kernels::counters::Counter;

/// Where `t`'s bytes start: its segment and the offset in it.
fn start(mem: &Memory, t: &Operand) -> Result<(u64, u64), Error> {
    let p = mem
        .placement(t.block)
        .ok_or_else(|| Error::Device(format!("{}: its block was freed", t.label)))?;
    Ok((p.segment, p.offset + t.offset))
}

impl GpuExecutor {
    /// Copies `t`'s bytes back to the host and waits for them.
    pub(crate) fn read_back<T: bytemuck::Pod>(
        &self,
        mem: &Memory,
        t: &Operand,
    ) -> Result<Vec<T>, Error> {
        let store = store(mem)?;
        let (segment, offset) = start(mem, t)?;
        let len = t.bytes();
        let gpu = &self.gpu;
        // Copies move whole 4-byte words; the block is 512-byte rounded, so reading up to the
        // next word stays inside it.
        let padded = len.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let staging = self.staging(padded.max(4));
        // The copy joins the pending commands: the step and its read-back are one submission.
        let runs = parts(store, segment, offset, padded)?;
        // The copy cannot join the kernels' open compute pass.
        self.step_cache().end_pass();
        self.record(|encoder| {
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
        self.flush()?;
        let submitted = std::time::Instant::now();
        self.count(Counter::SubmitNs, (submitted - started).as_nanos() as u64);
        self.count(Counter::ReadBack, 1);
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
        self.count(Counter::WaitNs, submitted.elapsed().as_nanos() as u64);
        let view = slice
            .get_mapped_range()
            .map_err(|e| Error::Device(format!("mapping the read-back buffer: {e}")))?;
        let out = bytemuck::pod_collect_to_vec(&view[..len as usize]);
        drop(view);
        staging.unmap();
        self.check()?;
        Ok(out)
    }

    /// Writes `data` at `t`'s bytes through the queue (padded to whole words).
    pub(crate) fn write(&self, mem: &Memory, t: &Operand, data: &[u8]) -> Result<(), Error> {
        let store = store(mem)?;
        let (segment, offset) = start(mem, t)?;
        // Queue writes run before the commands of the next submission: submit what is
        // recorded first, so a block freed and reused within a step (the next micro-batch's
        // input, say) is not overwritten before the kernels that still read it have run.
        self.flush()?;
        let padded;
        let data = if data.len().is_multiple_of(4) {
            data
        } else {
            padded = [data, &[0u8; 3][..4 - data.len() % 4]].concat();
            &padded[..]
        };
        for part in parts(store, segment, offset, data.len() as u64)? {
            let start = (part.start - offset) as usize;
            self.gpu.queue.write_buffer(
                part.buffer,
                part.offset,
                &data[start..start + part.len as usize],
            );
            self.count(Counter::BufferWrite, 1);
        }
        Ok(())
    }
}
