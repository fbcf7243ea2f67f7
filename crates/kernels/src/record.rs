//! Recording planned dispatches into the caller's encoder.
//!
//! Under a [`StepCache`] (how the engine records a step) each dispatch's parameters go into
//! the cache's uniform ring and its bind group comes from the cache, so a steady step
//! creates nothing. Without one, all uniforms of one kernel call go into one small new
//! buffer (one slice per dispatch, at the device's uniform offset alignment). Dispatches without gathered rows share one compute pass; a dispatch
//! with gathered rows is wrapped in copy-in / pass / copy-out, in encoder order, which is
//! what makes reusing the scratch buffers safe. Under a step cache, dispatches without
//! gathered rows join the cache's one open pass (see [`StepCache::end_pass`]).

use wgpu::util::DeviceExt;

use crate::counters::Counter;
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::Bind;
use crate::shader::{self, Store};
use crate::step_cache::{StepCache, create_bind_group};

/// One compute dispatch: `storage[i]` is bound at binding `i`, the uniform right after.
pub(crate) struct Dispatch<'a> {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: &'a wgpu::BindGroupLayout,
    pub storage: Vec<Bind<'a>>,
    /// Bindings the kernel writes (gathered ones are scattered back afterwards).
    pub writes: u32,
    pub params: Vec<u8>,
    pub groups: [u32; 3],
}

impl<'a> Dispatch<'a> {
    fn gathers(&self) -> bool {
        self.storage
            .iter()
            .any(|b| matches!(b, Bind::Gather { .. }))
    }
}

impl Kernels {
    /// A dispatch of `entry` in `source` (a hand-written WGSL file whose bindings, in
    /// order, are the float32 quads `names`, then its uniform), on `layout`: how the fused
    /// kernels (matmul/fused.rs, foreach.rs, optim_fused.rs) build theirs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn f32_quads_dispatch<'a>(
        &self,
        module: &str,
        source: &str,
        names: &[&str],
        entry: &str,
        layout: &'a (wgpu::BindGroupLayout, wgpu::PipelineLayout),
        storage: Vec<Bind<'a>>,
        writes: u32,
        params: &[u8],
        groups: [u32; 3],
    ) -> Result<Dispatch<'a>, KernelError> {
        let pipeline = self
            .cache
            .get(&self.device, &layout.1, module, entry, &[], || {
                let bindings: Vec<(&str, Store)> = names.iter().map(|&n| (n, Store::F32)).collect();
                let mut s = shader::prelude(shader::Compute::F32, &bindings, shader::Layout::Quads);
                s.push_str(source);
                s
            })?;
        Ok(Dispatch {
            pipeline,
            layout: &layout.0,
            storage,
            writes,
            params: params.to_vec(),
            groups,
        })
    }

    /// Records `fused` where there is one, else runs `separate` (the unfused kernels).
    pub(crate) fn fused_or(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        fused: Option<Dispatch<'_>>,
        separate: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<(), KernelError>,
    ) -> Result<(), KernelError> {
        match fused {
            Some(d) => {
                record(self, encoder, &[d]);
                Ok(())
            }
            None => separate(encoder),
        }
    }
}

/// Workgroup counts for `total` groups laid out 2-D within `max` per dimension;
/// shaders walk `(wg.y * nwg.x + wg.x)` with a grid stride, so any total works.
pub(crate) fn grid(total: u64, max: u32) -> [u32; 3] {
    let max = u64::from(max.max(1));
    let x = total.clamp(1, max);
    let y = total.div_ceil(x).clamp(1, max);
    [x as u32, y as u32, 1]
}

/// Where one dispatch's parameters live: a buffer and the offset of its slice.
type Uniform = (wgpu::Buffer, u64);

pub(crate) fn record(k: &Kernels, encoder: &mut wgpu::CommandEncoder, dispatches: &[Dispatch<'_>]) {
    k.count_pipelines();
    if dispatches.is_empty() {
        return;
    }
    let active = k.active();
    let uniforms = match &active {
        Some(cache) => dispatches
            .iter()
            .map(|d| cache.uniforms(&k.device, k.uniform_align, k.max_buffer(), &d.params))
            .collect(),
        None => own_uniforms(k, dispatches),
    };
    k.count(Counter::Dispatch, dispatches.len() as u64);
    let cache = active.as_deref();
    let mut i = 0;
    while i < dispatches.len() {
        if dispatches[i].gathers() {
            record_gathered(k, cache, encoder, &dispatches[i], &uniforms[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < dispatches.len() && !dispatches[j].gathers() {
            j += 1;
        }
        let groups: Vec<wgpu::BindGroup> = (i..j)
            .map(|n| bind_group(k, cache, &dispatches[n], &[], &uniforms[n]))
            .collect();
        let run = |pass: &mut wgpu::ComputePass<'_>| {
            for (d, g) in dispatches[i..j].iter().zip(&groups) {
                pass.set_pipeline(&d.pipeline);
                pass.set_bind_group(0, g, &[]);
                pass.dispatch_workgroups(d.groups[0], d.groups[1], d.groups[2]);
            }
        };
        // Under a step cache the dispatches join the step's shared pass (or, profiling,
        // each gets a timed pass of its own).
        match cache {
            Some(c) if c.profiling() => {
                for (d, g) in dispatches[i..j].iter().zip(&groups) {
                    let name = k.cache.name(&d.pipeline).unwrap_or_else(|| "?".into());
                    c.with_own_pass(encoder, name, |pass| {
                        pass.set_pipeline(&d.pipeline);
                        pass.set_bind_group(0, g, &[]);
                        pass.dispatch_workgroups(d.groups[0], d.groups[1], d.groups[2]);
                    });
                }
            }
            Some(c) => c.with_pass(encoder, run),
            None => run(
                &mut encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("gpumem-kernels"),
                    timestamp_writes: None,
                }),
            ),
        }
        i = j;
    }
}

/// Without a step cache: all uniforms of the call in one new buffer, one slice per
/// dispatch at the device's uniform offset alignment.
fn own_uniforms(k: &Kernels, dispatches: &[Dispatch<'_>]) -> Vec<Uniform> {
    let align = k.uniform_align;
    let len = dispatches
        .iter()
        .map(|d| d.params.len())
        .max()
        .unwrap_or(16) as u64;
    let stride = len.div_ceil(align) * align;
    let mut bytes = vec![0u8; (stride * dispatches.len() as u64) as usize];
    for (i, d) in dispatches.iter().enumerate() {
        let at = i * stride as usize;
        bytes[at..at + d.params.len()].copy_from_slice(&d.params);
    }
    let buffer = k
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("gpumem-kernels params"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
    k.count(Counter::UniformBuffer, 1);
    (0..dispatches.len() as u64)
        .map(|i| (buffer.clone(), i * stride))
        .collect()
}

fn record_gathered(
    k: &Kernels,
    cache: Option<&StepCache>,
    encoder: &mut wgpu::CommandEncoder,
    d: &Dispatch<'_>,
    uniform: &Uniform,
) {
    if let Some(c) = cache {
        c.end_pass();
    }
    // One scratch buffer per binding slot, so several gathered operands never collide.
    let scratch: Vec<Option<wgpu::Buffer>> = d
        .storage
        .iter()
        .enumerate()
        .map(|(slot, b)| match b {
            Bind::Gather { chunks, size, .. } => {
                let s = k.scratch(slot, *size);
                let mut at = 0;
                for c in chunks {
                    encoder.copy_buffer_to_buffer(c.buffer, c.offset, &s, at, c.len);
                    at += c.len;
                }
                Some(s)
            }
            Bind::Direct { .. } => None,
        })
        .collect();
    let group = bind_group(k, cache, d, &scratch, uniform);
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("gpumem-kernels gathered"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&d.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(d.groups[0], d.groups[1], d.groups[2]);
    }
    for (slot, (b, s)) in d.storage.iter().zip(&scratch).enumerate() {
        if let (Bind::Gather { chunks, .. }, Some(s)) = (b, s)
            && d.writes & (1 << slot) != 0
        {
            let mut at = 0;
            for c in chunks {
                encoder.copy_buffer_to_buffer(s, at, c.buffer, c.offset, c.len);
                at += c.len;
            }
        }
    }
}

fn bind_group(
    k: &Kernels,
    cache: Option<&StepCache>,
    d: &Dispatch<'_>,
    scratch: &[Option<wgpu::Buffer>],
    uniform: &Uniform,
) -> wgpu::BindGroup {
    let mut entries: Vec<(&wgpu::Buffer, u64, u64)> = d
        .storage
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Bind::Direct {
                buffer,
                offset,
                size,
                ..
            } => (*buffer, *offset, *size),
            Bind::Gather { size, .. } => match scratch.get(i) {
                Some(Some(s)) => (s, 0, *size),
                // Never planned: gathers are recorded through `record_gathered`.
                _ => (&k.dummy, 0, 16),
            },
        })
        .collect();
    entries.push((&uniform.0, uniform.1, d.params.len() as u64));
    match cache {
        Some(c) => c.bind_group(&k.device, d.layout, &entries),
        None => {
            k.count(Counter::BindGroup, 1);
            create_bind_group(&k.device, d.layout, &entries)
        }
    }
}
