//! Every shader module the crate can build, enumerated without a device: each kernel
//! family × the storage of each binding × the layouts it is declared with × the subgroup
//! variant, through the same source functions the pipeline cache compiles. Tests check
//! them all with naga (`support/translate.rs`) and commit the tiled ones (`matmul/tiled`).
//!
//! The storage of one call's bindings comes from one device, so float16 is native in all
//! of them or packed in all of them; each binding is otherwise any float storage (the
//! unused bindings of a call get the compute type's, which is one of them too).

mod limits;

use crate::elementwise::{ELEMENTWISE, FlatFamily};
use crate::loss;
use crate::matmul::{self, tiled};
use crate::optim::OPTIM;
use crate::reduce::COLSUM;
use crate::shader::{Layout, Store};
use crate::ternary::TERNARY;
use crate::xent;

/// Env var that makes tests rewrite the committed generated files they compare with.
pub(crate) const BLESS_ENV: &str = "GPUMEM_BLESS";

/// Whether `GPUMEM_BLESS=1`: rewrite committed generated files instead of failing.
pub(crate) fn bless() -> bool {
    std::env::var(BLESS_ENV).is_ok_and(|v| v.trim() == "1")
}

/// One shader module and what a device must offer for it.
pub(crate) struct Variant {
    /// `family/layout/storage…`, as the pipeline cache names it.
    pub name: String,
    pub source: String,
    /// Pipeline constants the host sets: the tiled kernel's workgroup size.
    pub overrides: &'static [&'static str],
    pub features: wgpu::Features,
    pub downlevel: wgpu::DownlevelFlags,
}

/// The workgroup size the host sets where a variant has an override: the largest one
/// (`tiled::WG_MAX`), so the limits see the worst case.
const WG: f64 = tiled::WG_MAX as f64;

impl Variant {
    /// The parsed module.
    pub fn parse(&self) -> Result<naga::Module, String> {
        naga::front::wgsl::parse_str(&self.source).map_err(|e| e.emit_to_string(&self.source))
    }

    /// Validates `module` as a device with `features` and `downlevel` would (wgpu's own
    /// map from them to naga's capabilities).
    pub fn validate(
        &self,
        module: &naga::Module,
        features: wgpu::Features,
        downlevel: wgpu::DownlevelFlags,
    ) -> Result<naga::valid::ModuleInfo, String> {
        let flags = naga::valid::ValidationFlags::all();
        wgpu_naga_bridge::create_validator(features, downlevel, flags)
            .validate(module)
            .map_err(|e| e.emit_to_string(&self.source))
    }

    /// `module` (this variant's) validated with exactly its needs, and its overrides set as the
    /// host sets them (backend writers need them resolved).
    pub fn compile(
        &self,
        module: &naga::Module,
    ) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
        let info = self.validate(module, self.features, self.downlevel)?;
        let mut constants = naga::back::PipelineConstants::default();
        for name in self.overrides {
            constants.insert((*name).to_string(), WG);
        }
        let (m, i) =
            naga::back::pipeline_constants::process_overrides(module, &info, None, &constants)
                .map_err(|e| format!("overrides: {e}"))?;
        Ok((m.into_owned(), i.into_owned()))
    }
}

/// The float storage of one device: float16 native, or packed.
const DEVICE_STORES: [[Store; 3]; 2] = [
    [Store::F32, Store::F64, Store::F16],
    [Store::F32, Store::F64, Store::F16Packed],
];

/// Every combination of `n` bindings' float storage on some device, each once.
pub(crate) fn combinations(n: usize) -> Vec<Vec<Store>> {
    let mut out: Vec<Vec<Store>> = Vec::new();
    for set in DEVICE_STORES {
        let mut all = vec![Vec::new()];
        for _ in 0..n {
            all = all
                .into_iter()
                .flat_map(|c| {
                    set.iter().map(move |&s| {
                        let mut c = c.clone();
                        c.push(s);
                        c
                    })
                })
                .collect();
        }
        for c in all {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// What a module whose bindings are stored as `stores` needs from the device.
fn needs(stores: &[Store], subgroups: bool) -> (wgpu::Features, wgpu::DownlevelFlags) {
    let mut f = wgpu::Features::empty();
    f.set(wgpu::Features::SHADER_F16, stores.contains(&Store::F16));
    f.set(wgpu::Features::SHADER_F64, stores.contains(&Store::F64));
    f.set(wgpu::Features::SUBGROUP, subgroups);
    let mut d = wgpu::DownlevelFlags::empty();
    // pack2x16float / unpack2x16float.
    d.set(
        wgpu::DownlevelFlags::SHADER_F16_IN_F32,
        stores.contains(&Store::F16Packed),
    );
    (f, d)
}

fn tags(stores: &[Store]) -> String {
    stores.iter().map(|s| s.tag()).collect::<Vec<_>>().join("/")
}

fn variant(name: String, source: String, stores: &[Store], subgroups: bool) -> Variant {
    let (features, downlevel) = needs(stores, subgroups);
    Variant {
        name,
        source,
        overrides: &[],
        features,
        downlevel,
    }
}

/// A flat family's modules, declared as each of `layouts`.
fn flat(family: &FlatFamily, layouts: &[Layout]) -> Vec<Variant> {
    let mut out = Vec::new();
    for &layout in layouts {
        for stores in combinations(family.bindings.len()) {
            let name = format!("{}/{layout:?}/{}", family.name, tags(&stores));
            out.push(variant(
                name,
                family.source(&stores, layout),
                &stores,
                false,
            ));
        }
    }
    out
}

/// `softmax_xent`'s modules: stats and dlogits are written row by row, never packed.
fn softmax_xent() -> Vec<Variant> {
    combinations(3)
        .into_iter()
        .filter(|s| s[1] != Store::F16Packed && s[2] != Store::F16Packed)
        .map(|s| {
            let stores = [s[0], s[1], s[2]];
            let name = format!("softmax_xent/{}", tags(&s));
            variant(name, loss::source(stores), &s, false)
        })
        .collect()
}

/// The cross-entropy ops' modules (`xent.rs`): every storage, since a row output (binding
/// a or c) may be packed float16 when its rows cover whole words (the host refuses packed
/// scalars, so the scalar entry points of a packed module are never used).
fn xent() -> Vec<Variant> {
    combinations(3)
        .into_iter()
        .map(|s| {
            let name = format!("xent/{}", tags(&s));
            variant(name, xent::source([s[0], s[1], s[2]]), &s, false)
        })
        .collect()
}

/// A hand-written matmul kernel's modules (`mm-naive`, `mm-skinny`).
fn matmul_family(family: &str, body: &str, layouts: &[Layout]) -> Vec<Variant> {
    let mut out = Vec::new();
    for &layout in layouts {
        for s in combinations(4) {
            let stores = [s[0], s[1], s[2], s[3]];
            let name = format!("{family}/{layout:?}/{}", tags(&s));
            let source = matmul::hand_written_source(body, stores, layout);
            out.push(variant(name, source, &s, false));
        }
    }
    out
}

/// Every tiled kernel: plain and subgroup, each operand any float storage.
pub(crate) fn tiled_specs() -> Vec<tiled::Spec> {
    let mut out = Vec::new();
    for sub in [false, true] {
        for s in combinations(4) {
            out.push(tiled::Spec {
                sub,
                a: s[0],
                b: s[1],
                c: s[2],
                bias: s[3],
            });
        }
    }
    out
}

/// The tiled kernels gpumem's precisions request, committed under `matmul/generated/`:
/// float32 and float64 throughout, and mixed precision (float16 activations, native or
/// packed, with float32 weights, gradients and bias: any of a, b, c float16, the bias
/// float32), plain and subgroup. The other storage combinations the kernels accept (292
/// in all, 17 MB of WGSL) are checked by naga but not committed.
pub(crate) fn engine_tiled_specs() -> Vec<tiled::Spec> {
    let precisions: [(&[Store], Store); 4] = [
        (&[Store::F32], Store::F32),
        (&[Store::F64], Store::F64),
        (&[Store::F32, Store::F16], Store::F32),
        (&[Store::F32, Store::F16Packed], Store::F32),
    ];
    let mut out: Vec<tiled::Spec> = Vec::new();
    for sub in [false, true] {
        for (values, bias) in precisions {
            for &a in values {
                for &b in values {
                    for &c in values {
                        let spec = tiled::Spec { sub, a, b, c, bias };
                        if !out.contains(&spec) {
                            out.push(spec);
                        }
                    }
                }
            }
        }
    }
    out
}

fn tiled_kernels() -> Vec<Variant> {
    tiled_specs()
        .into_iter()
        .map(|spec| {
            let stores = [spec.a, spec.b, spec.c, spec.bias];
            let name = format!("mm-tiled/{}", spec.key());
            Variant {
                overrides: &[tiled::WG_OVERRIDE],
                ..variant(name, tiled::source(spec), &stores, spec.sub)
            }
        })
        .collect()
}

/// Every module the crate can build.
pub(crate) fn all() -> Vec<Variant> {
    let both = [Layout::Scalar, Layout::Quads];
    let mut out = flat(&ELEMENTWISE, &both);
    out.extend(flat(&COLSUM, &[Layout::Scalar]));
    out.extend(flat(&TERNARY, &both));
    out.extend(flat(&OPTIM, &both));
    out.extend(softmax_xent());
    out.extend(xent());
    out.extend(matmul_family("mm-naive", matmul::NAIVE, &both));
    out.extend(matmul_family("mm-skinny", matmul::SKINNY, &both));
    out.extend(tiled_kernels());
    out
}
