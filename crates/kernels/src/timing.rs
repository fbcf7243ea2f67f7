//! Kernel time from the GPU's own clock: a timestamp written at the start and the end of each
//! shared compute pass (`Features::TIMESTAMP_QUERY`), resolved into a buffer before the
//! submission and read back after it. Off unless asked for ([`StepCache::time_kernels`]): the
//! read-back waits for the device at every submission, which a training run should not.
//!
//! [`StepCache::time_kernels`]: crate::StepCache::time_kernels

/// Passes timed per submission; the ones past it in a submission go untimed (and counted).
pub const TIMED_PASSES: u32 = 64;

/// Bytes of one resolved timestamp.
const STAMP: u64 = 8;

/// The query set and buffers, and the time summed so far.
#[derive(Debug)]
pub(crate) struct Timing {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Passes begun with timestamps since the last submission.
    passes: u32,
    /// Nanoseconds per tick of the queue's clock.
    period: f32,
    totals: KernelTime,
    /// The kernel of each pass this submission, when profiling (empty names otherwise).
    names: Vec<String>,
    profile: Vec<KernelShare>,
}

/// One kernel's device time while profiling, each dispatch in a timed pass of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelShare {
    /// The WGSL entry point.
    pub kernel: String,
    pub nanoseconds: f64,
    pub dispatches: u64,
}

/// Device time inside the timed compute passes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KernelTime {
    pub nanoseconds: f64,
    /// Passes timed.
    pub passes: u64,
    /// Passes begun when every query of their submission was taken (not timed).
    pub untimed: u64,
}

impl Timing {
    /// Timing on `device`, or `None` where it has no timestamp queries.
    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Option<Timing> {
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let count = 2 * TIMED_PASSES;
        let bytes = u64::from(count) * STAMP;
        let buffer = |usage, label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        Some(Timing {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("gpumem-kernels pass timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count,
            }),
            resolve: buffer(U::QUERY_RESOLVE | U::COPY_SRC, "timestamp resolve"),
            readback: buffer(U::MAP_READ | U::COPY_DST, "timestamp read-back"),
            passes: 0,
            period: queue.get_timestamp_period(),
            totals: KernelTime::default(),
            names: Vec::new(),
            profile: Vec::new(),
        })
    }

    /// The timestamp writes of the next pass, if a query pair is left this submission.
    pub(crate) fn next_pass(&mut self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        self.next_named_pass(String::new())
    }

    /// [`Timing::next_pass`] for a pass of one kernel, named in the profile.
    pub(crate) fn next_named_pass(
        &mut self,
        kernel: String,
    ) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        if self.passes == TIMED_PASSES {
            self.totals.untimed += 1;
            return None;
        }
        let i = 2 * self.passes;
        self.passes += 1;
        self.names.push(kernel);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(i),
            end_of_pass_write_index: Some(i + 1),
        })
    }

    /// Records the resolve of this submission's timestamps (after its last pass ended).
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        if self.passes == 0 {
            return;
        }
        let count = 2 * self.passes;
        encoder.resolve_query_set(&self.queries, 0..count, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(
            &self.resolve,
            0,
            &self.readback,
            0,
            u64::from(count) * STAMP,
        );
    }

    /// After the submission: waits for it, and adds its passes' time.
    pub(crate) fn collect(&mut self, device: &wgpu::Device) {
        if self.passes == 0 {
            return;
        }
        let bytes = u64::from(2 * self.passes) * STAMP;
        let slice = self.readback.slice(0..bytes);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        if device.poll(wgpu::PollType::wait_indefinitely()).is_ok()
            && let Ok(data) = slice.get_mapped_range()
        {
            let stamps: &[u64] = bytemuck::cast_slice(&data);
            for (pair, name) in stamps.chunks_exact(2).zip(&self.names) {
                let ns = pair[1].saturating_sub(pair[0]) as f64 * f64::from(self.period);
                self.totals.nanoseconds += ns;
                self.totals.passes += 1;
                if !name.is_empty() {
                    add_share(&mut self.profile, name, ns);
                }
            }
        }
        self.readback.unmap();
        self.passes = 0;
        self.names.clear();
    }

    pub(crate) fn profile(&self) -> &[KernelShare] {
        &self.profile
    }

    pub(crate) fn totals(&self) -> KernelTime {
        self.totals
    }
}

/// Adds one dispatch of `kernel` taking `ns` to `profile`.
fn add_share(profile: &mut Vec<KernelShare>, kernel: &str, ns: f64) {
    match profile.iter_mut().find(|s| s.kernel == kernel) {
        Some(s) => {
            s.nanoseconds += ns;
            s.dispatches += 1;
        }
        None => profile.push(KernelShare {
            kernel: kernel.to_string(),
            nanoseconds: ns,
            dispatches: 1,
        }),
    }
}
