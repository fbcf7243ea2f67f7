//! Every variant through naga (the shader compiler inside wgpu), no adapter needed:
//! parsed, validated with the capabilities wgpu derives from a device that has exactly the
//! variant's needs, and written in the language of every backend the support table says
//! may run it (SPIR-V, MSL, HLSL, GLSL ES 3.10 and 4.30). A variant naga cannot validate
//! or translate for such a backend fails here.
//!
//! What this cannot show: nothing here runs the platforms' own compilers (Apple's Metal
//! compiler, DXC/FXC, a GL driver's GLSL compiler), so MSL and HLSL are only known to be
//! what wgpu would hand them; the GL pass of CI compiles the GLSL on llvmpipe.

use std::panic::AssertUnwindSafe;

use naga::back::{glsl, hlsl, msl, spv};
use naga::valid::ModuleInfo;

use super::{Backend, Need, may_run};
use crate::variants::{Variant, all};

/// Writes `module` in `backend`'s language(s).
fn translate(
    backend: Backend,
    v: &Variant,
    m: &naga::Module,
    i: &ModuleInfo,
) -> Result<(), String> {
    match backend {
        Backend::Vulkan => spirv(m, i),
        Backend::Metal => metal(m, i),
        Backend::Dx12 => hlsl(v, m, i),
        Backend::Gl => {
            glsl(m, i, glsl::Version::new_gles(310))?;
            glsl(m, i, glsl::Version::Desktop(430))
        }
    }
}

fn spirv(m: &naga::Module, i: &ModuleInfo) -> Result<(), String> {
    let options = spv::Options {
        lang_version: (1, 3),
        ..Default::default()
    };
    spv::write_vec(m, i, &options, None)
        .map(drop)
        .map_err(|e| format!("SPIR-V: {e}"))
}

/// MSL, each buffer in the slot of its binding number and the runtime arrays' sizes in
/// slot 30 (wgpu assigns slots from the pipeline layout; any fitting map will do).
fn metal(m: &naga::Module, i: &ModuleInfo) -> Result<(), String> {
    let mut resources = msl::BindingMap::default();
    for (_, var) in m.global_variables.iter() {
        if let Some(rb) = &var.binding {
            let target = msl::BindTarget {
                buffer: Some(rb.binding as u8),
                mutable: matches!(var.space, naga::AddressSpace::Storage { .. }),
                ..Default::default()
            };
            resources.insert(*rb, target);
        }
    }
    let per_entry_point_map = m
        .entry_points
        .iter()
        .map(|ep| {
            let r = msl::EntryPointResources {
                resources: resources.clone(),
                immediates_buffer: None,
                sizes_buffer: Some(30),
            };
            (ep.name.clone(), r)
        })
        .collect();
    let options = msl::Options {
        lang_version: (2, 1),
        per_entry_point_map,
        fake_missing_bindings: false,
        ..Default::default()
    };
    msl::write_string(m, i, &options, &msl::PipelineOptions::default())
        .map(drop)
        .map_err(|e| format!("MSL: {e}"))
}

/// HLSL at the lowest shader model the variant allows (float16 needs 6.2, subgroups 6.0).
fn hlsl(v: &Variant, m: &naga::Module, i: &ModuleInfo) -> Result<(), String> {
    let shader_model = if v.features.contains(wgpu::Features::SHADER_F16) {
        hlsl::ShaderModel::V6_2
    } else if v.features.contains(wgpu::Features::SUBGROUP) {
        hlsl::ShaderModel::V6_0
    } else {
        hlsl::ShaderModel::V5_1
    };
    let options = hlsl::Options {
        shader_model,
        ..Default::default()
    };
    let pipeline = hlsl::PipelineOptions { entry_point: None };
    let mut out = String::new();
    hlsl::Writer::new(&mut out, &options, &pipeline)
        .write(m, i, None)
        .map(drop)
        .map_err(|e| format!("HLSL {shader_model:?}: {e}"))
}

/// GLSL, one program per entry point as wgpu's GL backend compiles them.
fn glsl(m: &naga::Module, i: &ModuleInfo, version: glsl::Version) -> Result<(), String> {
    let options = glsl::Options {
        version,
        ..Default::default()
    };
    for ep in &m.entry_points {
        let pipeline = glsl::PipelineOptions {
            shader_stage: ep.stage,
            entry_point: ep.name.clone(),
            multiview: None,
        };
        let mut out = String::new();
        glsl::Writer::new(&mut out, m, i, &options, &pipeline, Default::default())
            .and_then(|mut w| w.write())
            .map_err(|e| format!("GLSL {version} {}: {e}", ep.name))?;
    }
    Ok(())
}

/// Each of the variant's features and flags is needed: validation fails without it (so
/// the needs, which decide what the support table skips, are not overstated).
fn each_need_is_needed(v: &Variant, module: &naga::Module) -> Result<(), String> {
    for f in v.features.iter() {
        if v.validate(module, v.features - f, v.downlevel).is_ok() {
            return Err(format!("validates without {f:?}"));
        }
    }
    for d in v.downlevel.iter() {
        if v.validate(module, v.features, v.downlevel - d).is_ok() {
            return Err(format!("validates without {d:?}"));
        }
    }
    Ok(())
}

/// Checks one variant; the backends it was translated for. A writer that panics (naga's
/// MSL writer does on f64) is a failure of this variant, not of the whole test.
fn check(v: &Variant) -> Result<Vec<Backend>, String> {
    let module = v.parse()?;
    each_need_is_needed(v, &module)?;
    let (m, i) = v.compile(&module)?;
    let needs = Need::of(v.features, v.downlevel);
    let mut done = Vec::new();
    for b in Backend::ALL.into_iter().filter(|&b| may_run(b, &needs)) {
        let written = std::panic::catch_unwind(AssertUnwindSafe(|| translate(b, v, &m, &i)));
        written
            .unwrap_or_else(|_| Err("the writer panicked".into()))
            .map_err(|e| format!("{}: {e}", b.name()))?;
        done.push(b);
    }
    Ok(done)
}

#[test]
fn every_variant_validates_and_translates_for_every_backend_that_may_run_it() {
    let variants = all();
    assert!(!variants.is_empty(), "no variants enumerated");
    let mut translated = [0usize; Backend::ALL.len()];
    let mut failures = Vec::new();
    for v in &variants {
        match check(v) {
            Ok(backends) => {
                for (n, b) in translated.iter_mut().zip(Backend::ALL) {
                    *n += usize::from(backends.contains(&b));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", v.name)),
        }
    }
    println!(
        "{} kernel variants validated by naga; translated per backend:",
        variants.len()
    );
    for (b, n) in Backend::ALL.iter().zip(translated) {
        println!(
            "  {:<10} {n:>5} ({}), {} skipped",
            b.name(),
            b.language(),
            variants.len() - n
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} variants failed:\n{}",
        failures.len(),
        variants.len(),
        failures.join("\n")
    );
    // Vulkan may run every variant; GL only those without float16, float64 and subgroups.
    assert_eq!(translated[0], variants.len());
    let plain = variants
        .iter()
        .filter(|v| {
            Need::of(v.features, v.downlevel)
                .iter()
                .all(|n| *n == Need::F16Packed)
        })
        .count();
    assert_eq!(translated[3], plain);
    // Every backend translated exactly what the support table says it may run.
    assert_eq!(translated, super::counts().0);
}
