//! Building shader modules and compute pipelines: every wgpu call that can reject a
//! kernel runs inside a validation error scope, and what was built is cached.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::error::KernelError;

/// Bind group layouts shared by kernel families: `n` read-write storage buffers then
/// one uniform. Read-write everywhere because tensors of one call may share a buffer
/// (one allocator segment), and wgpu rejects a buffer bound read-only and writable at once.
#[derive(Debug)]
pub(crate) struct Layouts {
    pub storage2: (wgpu::BindGroupLayout, wgpu::PipelineLayout),
    pub storage3: (wgpu::BindGroupLayout, wgpu::PipelineLayout),
    pub storage4: (wgpu::BindGroupLayout, wgpu::PipelineLayout),
    /// Five storage buffers: only where the device binds that many per stage (WebGPU's
    /// downlevel limits allow 4); the fused kernels that need it fall back without it.
    pub storage5: Option<(wgpu::BindGroupLayout, wgpu::PipelineLayout)>,
    /// Eight, likewise (foreach SGD's four pairs).
    pub storage8: Option<(wgpu::BindGroupLayout, wgpu::PipelineLayout)>,
}

impl Layouts {
    pub fn new(device: &wgpu::Device) -> Self {
        Layouts {
            storage2: layout(device, 2),
            storage3: layout(device, 3),
            storage4: layout(device, 4),
            storage5: (device.limits().max_storage_buffers_per_shader_stage >= 5)
                .then(|| layout(device, 5)),
            storage8: (device.limits().max_storage_buffers_per_shader_stage >= 8)
                .then(|| layout(device, 8)),
        }
    }
}

fn layout(device: &wgpu::Device, storage: u32) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
    let mut entries: Vec<wgpu::BindGroupLayoutEntry> = (0..storage)
        .map(|binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    entries.push(wgpu::BindGroupLayoutEntry {
        binding: storage,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    });
    let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("gpumem-kernels layout"),
        entries: &entries,
    });
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("gpumem-kernels pipeline layout"),
        bind_group_layouts: &[Some(&bgl)],
        immediate_size: 0,
    });
    (bgl, pl)
}

/// Compiles `source` inside a validation error scope, so a shader the device rejects
/// becomes a [`KernelError`] instead of a stored wgpu error and silently broken kernels.
pub(crate) fn shader_module(
    device: &wgpu::Device,
    label: &str,
    source: &str,
) -> Result<wgpu::ShaderModule, KernelError> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    match pollster::block_on(scope.pop()) {
        None => Ok(module),
        Some(e) => Err(KernelError::Pipeline(format!("{label}: {e}"))),
    }
}

/// The pipeline of `entry` in `module`, likewise inside a validation error scope.
pub(crate) fn compute_pipeline(
    device: &wgpu::Device,
    label: &str,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    entry: &str,
    constants: &[(&str, f64)],
) -> Result<wgpu::ComputePipeline, KernelError> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            zero_initialize_workgroup_memory: true,
        },
        cache: None,
    });
    match pollster::block_on(scope.pop()) {
        None => Ok(pipeline),
        Some(e) => Err(KernelError::Pipeline(format!("{label}: {e}"))),
    }
}

/// Shader modules and pipelines built on first use, keyed by a description of their
/// generated source (a module holds every entry point of its file). Shared by every
/// [`crate::Kernels`] made with `reuse_with_limits`.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    inner: Mutex<CacheMaps>,
}

#[derive(Debug, Default)]
struct CacheMaps {
    modules: HashMap<String, wgpu::ShaderModule>,
    pipelines: HashMap<String, wgpu::ComputePipeline>,
    /// Each pipeline's entry point: what a kernel profile calls it.
    names: HashMap<wgpu::ComputePipeline, String>,
}

impl Cache {
    /// The pipeline of `entry` in the module `module_key`, compiling the module from
    /// `source()` the first time it is needed. The lock is held while building, so
    /// concurrent callers build each once.
    pub fn get(
        &self,
        device: &wgpu::Device,
        layout: &wgpu::PipelineLayout,
        module_key: &str,
        entry: &str,
        constants: &[(&str, f64)],
        source: impl FnOnce() -> String,
    ) -> Result<wgpu::ComputePipeline, KernelError> {
        let mut maps = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let key = format!("{module_key}#{entry}");
        if let Some(p) = maps.pipelines.get(&key) {
            return Ok(p.clone());
        }
        let module = match maps.modules.get(module_key) {
            Some(m) => m.clone(),
            None => {
                let m = shader_module(device, module_key, &source())?;
                maps.modules.insert(module_key.to_string(), m.clone());
                m
            }
        };
        let p = compute_pipeline(device, &key, &module, layout, entry, constants)?;
        maps.pipelines.insert(key, p.clone());
        maps.names.insert(p.clone(), entry.to_string());
        Ok(p)
    }

    /// The entry point `pipeline` was built from.
    pub fn name(&self, pipeline: &wgpu::ComputePipeline) -> Option<String> {
        let maps = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        maps.names.get(pipeline).cloned()
    }

    /// How many pipelines were built.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pipelines
            .len()
    }
}
