//! Every variant fits `wgpu::Limits::downlevel_defaults()`, the limits every wgpu device
//! offers (the kernels plan bindings and workgroup counts with the device's own limits at
//! run time; what a shader declares cannot adapt).

use naga::proc::Layouter;
use naga::{AddressSpace, Module};

use super::{Variant, all};

/// Why `m` (compiled, overrides set) exceeds `lim`, if it does.
fn excess(m: &Module, lim: &wgpu::Limits) -> Result<(), String> {
    for ep in &m.entry_points {
        let [x, y, z] = ep.workgroup_size;
        let max = [
            lim.max_compute_workgroup_size_x,
            lim.max_compute_workgroup_size_y,
            lim.max_compute_workgroup_size_z,
        ];
        if x > max[0]
            || y > max[1]
            || z > max[2]
            || x * y * z > lim.max_compute_invocations_per_workgroup
        {
            return Err(format!(
                "{}: workgroup {x}x{y}x{z} exceeds {max:?}",
                ep.name
            ));
        }
    }
    let mut layouter = Layouter::default();
    layouter.update(m.to_ctx()).map_err(|e| e.to_string())?;
    let (mut storage, mut uniform, mut workgroup_bytes) = (0, 0, 0);
    for (_, var) in m.global_variables.iter() {
        let size = layouter[var.ty].size;
        match var.space {
            AddressSpace::Storage { .. } => storage += 1,
            AddressSpace::Uniform if size > lim.max_uniform_buffer_binding_size as u32 => {
                return Err(format!("a uniform of {size} bytes"));
            }
            AddressSpace::Uniform => uniform += 1,
            AddressSpace::WorkGroup => workgroup_bytes += size,
            _ => {}
        }
        if let Some(rb) = &var.binding
            && (rb.group >= lim.max_bind_groups || rb.binding >= lim.max_bindings_per_bind_group)
        {
            return Err(format!("binding {rb:?}"));
        }
    }
    if storage > lim.max_storage_buffers_per_shader_stage
        || uniform > lim.max_uniform_buffers_per_shader_stage
        || workgroup_bytes > lim.max_compute_workgroup_storage_size
    {
        return Err(format!(
            "{storage} storage buffers, {uniform} uniforms, {workgroup_bytes} bytes of workgroup memory"
        ));
    }
    Ok(())
}

fn check(v: &Variant, lim: &wgpu::Limits) -> Result<(), String> {
    let (m, _) = v.compile(&v.parse()?)?;
    excess(&m, lim)
}

#[test]
fn every_variant_fits_the_downlevel_limits() {
    let lim = wgpu::Limits::downlevel_defaults();
    let variants = all();
    assert!(!variants.is_empty(), "no variants enumerated");
    let failures: Vec<String> = variants
        .iter()
        .filter_map(|v| check(v, &lim).err().map(|e| format!("{}: {e}", v.name)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "{} kernel variants fit wgpu::Limits::downlevel_defaults()",
        variants.len()
    );
}

/// The check can fail: limits one below what the kernels use are refused.
#[test]
fn tighter_limits_are_refused() {
    let tiled = all()
        .into_iter()
        .find(|v| v.name.starts_with("mm-tiled/"))
        .expect("a tiled variant");
    let (m, _) = tiled
        .compile(&tiled.parse().expect("parses"))
        .expect("compiles");
    let lim = wgpu::Limits::downlevel_defaults();
    assert!(excess(&m, &lim).is_ok());
    let wg = crate::matmul::tiled::WG_MAX;
    for tight in [
        wgpu::Limits {
            max_compute_workgroup_size_x: wg - 1,
            ..lim.clone()
        },
        wgpu::Limits {
            max_compute_invocations_per_workgroup: wg - 1,
            ..lim.clone()
        },
        wgpu::Limits {
            max_storage_buffers_per_shader_stage: 3,
            ..lim.clone()
        },
        wgpu::Limits {
            max_bindings_per_bind_group: 4,
            ..lim.clone()
        },
    ] {
        assert!(excess(&m, &tight).is_err(), "{tight:?}");
    }
}
