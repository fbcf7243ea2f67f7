//! Opening the backing a [`Backend`] names, among those this build has: `plan` always,
//! `wgpu` and `cpu` with their features. The planner (`default-features = false`) answers a
//! request for a backing it left out with [`Error::NotBuilt`], never a panic.

use super::Backing;
use crate::backend::Backend;
use crate::error::Error;

/// The backing, its name, and why it was chosen.
pub(crate) type Opened = (Backing, String, String);

/// Opens the backing `backend` names (`auto`: the one it finds).
pub(crate) fn open(backend: Backend) -> Result<Opened, Error> {
    match backend {
        Backend::Plan => Ok((Backing::Plan, "plan".into(), "asked for".into())),
        Backend::Cpu => cpu("asked for".into()),
        Backend::Wgpu => wgpu(),
        Backend::Auto => auto(),
    }
}

#[cfg(feature = "cpu")]
fn cpu(reason: String) -> Result<Opened, Error> {
    let store = super::HostStore::default();
    Ok((Backing::Cpu(store), "host memory".into(), reason))
}

#[cfg(not(feature = "cpu"))]
fn cpu(_reason: String) -> Result<Opened, Error> {
    Err(Error::NotBuilt(Backend::Cpu))
}

#[cfg(feature = "wgpu")]
fn wgpu() -> Result<Opened, Error> {
    use gpumem_kernels::gpu::{Gpu, GpuOptions};
    let gpu = Gpu::new(&GpuOptions::default()).map_err(|e| Error::NoAdapter(e.to_string()))?;
    let kind = if gpu.is_hardware() {
        "hardware"
    } else {
        "software"
    };
    Ok(on_gpu(gpu, format!("asked for, a {kind} adapter")))
}

#[cfg(not(feature = "wgpu"))]
fn wgpu() -> Result<Opened, Error> {
    Err(Error::NotBuilt(Backend::Wgpu))
}

#[cfg(feature = "wgpu")]
fn on_gpu(gpu: gpumem_kernels::gpu::Gpu, reason: String) -> Opened {
    let name = gpu.info().name.clone();
    let store = super::BufferStore::new(std::rc::Rc::new(gpu));
    (Backing::Wgpu(store), name, reason)
}

/// A hardware GPU if there is one, else the cpu backing.
#[cfg(feature = "wgpu")]
fn auto() -> Result<Opened, Error> {
    use gpumem_kernels::gpu::{Gpu, GpuError, GpuOptions};
    let hardware = GpuOptions {
        require_hardware: true,
        ..Default::default()
    };
    match Gpu::new(&hardware) {
        Ok(gpu) => Ok(on_gpu(gpu, "auto: found a hardware GPU".into())),
        Err(e) => cpu(match e {
            GpuError::NoHardwareAdapter(_) => "auto: no hardware GPU; a software adapter, which \
                `--backend wgpu` runs on"
                .into(),
            _ => "auto: no GPU adapter at all, so the cpu backing".into(),
        }),
    }
}

/// Without wgpu, `auto` has only the cpu backing to choose.
#[cfg(not(feature = "wgpu"))]
fn auto() -> Result<Opened, Error> {
    cpu("auto: this build has no wgpu backing, so the cpu backing".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planner's answer to a backing it left out names the feature that brings it back.
    #[test]
    fn a_backing_left_out_names_its_feature() {
        for (backend, feature) in [(Backend::Wgpu, "`wgpu`"), (Backend::Cpu, "`cpu`")] {
            let message = Error::NotBuilt(backend).to_string();
            assert!(
                message.contains(&format!("no {backend} backing"))
                    && message.contains(&format!("enable the {feature} feature")),
                "{message}"
            );
        }
    }

    /// `plan` is in every build.
    #[test]
    fn plan_always_opens() {
        let (backing, name, _) = open(Backend::Plan).expect("plan opens");
        assert!(matches!(backing, Backing::Plan) && name == "plan");
    }
}
