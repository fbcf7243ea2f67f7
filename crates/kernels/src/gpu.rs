//! The one place where wgpu is set up: instance, adapter choice, device, error capture.
//!
//! Every wgpu error that is not caught by an error scope goes to the handler installed
//! here instead of panicking the process; callers poll [`Gpu::take_errors`] (the engine
//! does so after each step) and decide what to do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// How to choose and open the adapter.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Refuse software adapters (`DeviceType::Cpu`, e.g. lavapipe/llvmpipe).
    pub require_hardware: bool,
    /// Ask for `SHADER_F16` / `SHADER_F64` when the adapter has them (never required).
    pub skip_optional_features: bool,
    /// Open the device with `wgpu::Limits::downlevel_defaults()`, which every adapter
    /// offers, instead of the adapter's own limits: how tests show the kernels fit them.
    pub downlevel_limits: bool,
}

/// Why no device could be opened.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no wgpu adapter found (set WGPU_BACKEND to pick a backend; install a Vulkan driver such as mesa-vulkan-drivers)"
    )]
    NoAdapter,
    #[error("only software adapters found ({0}); a hardware GPU was required")]
    NoHardwareAdapter(String),
    #[error("requesting the device failed: {0}")]
    RequestDevice(#[from] wgpu::RequestDeviceError),
}

/// One wgpu error captured by the uncaptured-error handler, kept as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedError {
    pub kind: CapturedErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturedErrorKind {
    OutOfMemory,
    Validation,
    Internal,
}

/// An opened device with its queue and what we learnt about the adapter.
#[derive(Debug)]
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    errors: Arc<Mutex<Vec<CapturedError>>>,
    lost: Arc<AtomicBool>,
}

impl Gpu {
    /// Opens the best adapter (discrete > integrated > virtual > other > cpu) with the
    /// adapter's own limits, so large buffers and bindings are available.
    pub fn new(options: &GpuOptions) -> Result<Gpu, GpuError> {
        pollster::block_on(Self::new_async(options))
    }

    pub async fn new_async(options: &GpuOptions) -> Result<Gpu, GpuError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let mut best: Option<(u8, wgpu::Adapter)> = None;
        let mut software = Vec::new();
        for adapter in adapters {
            let info = adapter.get_info();
            if options.require_hardware && info.device_type == wgpu::DeviceType::Cpu {
                software.push(info.name);
                continue;
            }
            let rank = device_rank(info.device_type);
            if best.as_ref().is_none_or(|(r, _)| rank > *r) {
                best = Some((rank, adapter));
            }
        }
        let Some((_, adapter)) = best else {
            return Err(if software.is_empty() {
                GpuError::NoAdapter
            } else {
                GpuError::NoHardwareAdapter(software.join(", "))
            });
        };

        // Timestamp queries cost nothing until a bench asks for them (`StepCache::time_kernels`).
        let optional = wgpu::Features::SHADER_F16
            | wgpu::Features::SHADER_F64
            | wgpu::Features::SUBGROUP
            | wgpu::Features::TIMESTAMP_QUERY;
        let required_features = if options.skip_optional_features {
            wgpu::Features::empty()
        } else {
            adapter.features() & optional
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("gpumem"),
                required_features,
                required_limits: if options.downlevel_limits {
                    wgpu::Limits::downlevel_defaults()
                } else {
                    adapter.limits()
                },
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await?;

        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let captured = capture(&e);
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(captured);
        }));
        let lost = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&lost);
        device.set_device_lost_callback(move |_reason, _message| {
            flag.store(true, Ordering::SeqCst);
        });

        Ok(Gpu {
            device,
            queue,
            info: adapter.get_info(),
            errors,
            lost,
        })
    }

    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    pub fn limits(&self) -> wgpu::Limits {
        self.device.limits()
    }

    pub fn features(&self) -> wgpu::Features {
        self.device.features()
    }

    /// False for software rasterisers (lavapipe, llvmpipe, WARP).
    pub fn is_hardware(&self) -> bool {
        self.info.device_type != wgpu::DeviceType::Cpu
    }

    /// Errors captured since the last call, oldest first.
    pub fn take_errors(&self) -> Vec<CapturedError> {
        std::mem::take(&mut *self.errors.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// True once the device-lost callback has fired.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Blocks until all submitted work has finished.
    pub fn wait(&self) -> Result<(), wgpu::PollError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
    }
}

fn device_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 4,
        wgpu::DeviceType::IntegratedGpu => 3,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 1,
        wgpu::DeviceType::Cpu => 0,
    }
}

fn capture(e: &wgpu::Error) -> CapturedError {
    let (kind, source) = match e {
        wgpu::Error::OutOfMemory { source } => (CapturedErrorKind::OutOfMemory, source),
        wgpu::Error::Validation { source, .. } => (CapturedErrorKind::Validation, source),
        wgpu::Error::Internal { source, .. } => (CapturedErrorKind::Internal, source),
    };
    CapturedError {
        kind,
        message: format!("{e} ({source})"),
    }
}
