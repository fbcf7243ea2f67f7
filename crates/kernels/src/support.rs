//! Which kernel variants each wgpu backend is expected to run: the one table the naga
//! test (`support/translate.rs`) follows and `README.md` shows (a test keeps them equal).
//!
//! A variant needs what its storage and subgroup use ask of the device (see
//! `variants.rs`); a backend either always offers a need, offers it on some devices, or
//! never does in wgpu 30. The naga test validates and translates every variant for every
//! backend that may offer all its needs, and skips the rest; it lives here, beside the
//! table it checks, while `variants.rs` only enumerates (and knows nothing of backends).

mod translate;

use std::fmt::Write as _;

/// A wgpu backend, by the shading language naga writes for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    Vulkan,
    Metal,
    Dx12,
    Gl,
}

impl Backend {
    pub const ALL: [Backend; 4] = [Backend::Vulkan, Backend::Metal, Backend::Dx12, Backend::Gl];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Vulkan => "Vulkan",
            Backend::Metal => "Metal",
            Backend::Dx12 => "DX12",
            Backend::Gl => "GL / GLES",
        }
    }

    /// The language naga writes, as the table names it.
    pub fn language(self) -> &'static str {
        match self {
            Backend::Vulkan => "SPIR-V 1.3",
            Backend::Metal => "MSL 2.1",
            Backend::Dx12 => "HLSL (SM 5.1, 6.0 with subgroups, 6.2 with float16)",
            Backend::Gl => "GLSL ES 3.10 and GLSL 4.30",
        }
    }
}

/// What a variant may need beyond float32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Packed float16 (`pack2x16float`): `DownlevelFlags::SHADER_F16_IN_F32`.
    F16Packed,
    /// Native float16: `Features::SHADER_F16`.
    F16,
    /// float64: `Features::SHADER_F64`.
    F64,
    /// The subgroup variant of the tiled matmul: `Features::SUBGROUP`.
    Subgroups,
}

/// Whether a backend offers a need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    Always,
    /// On some devices (which, as the table says it).
    Some(&'static str),
    /// Never (why).
    Never(&'static str),
}

impl Need {
    pub const ALL: [Need; 4] = [Need::F16Packed, Need::F16, Need::F64, Need::Subgroups];

    pub fn name(self) -> &'static str {
        match self {
            Need::F16Packed => "float16, packed (`SHADER_F16_IN_F32`)",
            Need::F16 => "float16, native (`SHADER_F16`)",
            Need::F64 => "float64 (`SHADER_F64`)",
            Need::Subgroups => "subgroups (`SUBGROUP`)",
        }
    }

    /// The needs of a variant that asks for `features` and `downlevel`.
    pub fn of(features: wgpu::Features, downlevel: wgpu::DownlevelFlags) -> Vec<Need> {
        Need::ALL
            .into_iter()
            .filter(|n| match n {
                Need::F16Packed => downlevel.contains(wgpu::DownlevelFlags::SHADER_F16_IN_F32),
                Need::F16 => features.contains(wgpu::Features::SHADER_F16),
                Need::F64 => features.contains(wgpu::Features::SHADER_F64),
                Need::Subgroups => features.contains(wgpu::Features::SUBGROUP),
            })
            .collect()
    }

    /// What `backend` offers (wgpu-hal 30's adapters; wgpu-types' feature docs).
    pub fn offer(self, backend: Backend) -> Offer {
        use {Backend as B, Need as N, Offer as O};
        match (self, backend) {
            (N::F16Packed, B::Vulkan) => O::Some("yes, but not llvmpipe without `SHADER_F16`"),
            (N::F16Packed, _) => O::Always,
            (N::F16, B::Vulkan) => O::Some("devices with `shaderFloat16` and 16-bit storage"),
            (N::F16, B::Metal) => O::Always,
            (N::F16, B::Dx12) => O::Some("SM 6.2 with native 16-bit ops"),
            (N::F16, B::Gl) => O::Never("not offered by wgpu's GL backend"),
            (N::F64, B::Vulkan) => O::Some("devices with `shaderFloat64`"),
            (N::F64, B::Metal) => O::Never("MSL has no 64-bit float"),
            (N::F64, B::Dx12 | B::Gl) => O::Never("wgpu offers `SHADER_F64` on Vulkan only"),
            (N::Subgroups, B::Vulkan) => O::Some("devices with subgroup operations in compute"),
            (N::Subgroups, B::Metal) => O::Some("SIMD-group operations (Apple7+, Mac2)"),
            (N::Subgroups, B::Dx12) => O::Some("SM 6.0 with wave operations"),
            (N::Subgroups, B::Gl) => O::Never("not offered by wgpu's GL backend"),
        }
    }
}

/// Whether `backend` may run a variant with `needs` (on some device).
pub(crate) fn may_run(backend: Backend, needs: &[Need]) -> bool {
    needs
        .iter()
        .all(|n| !matches!(n.offer(backend), Offer::Never(_)))
}

/// How many of every variant the crate can build each backend may run, and the total.
pub(crate) fn counts() -> ([usize; Backend::ALL.len()], usize) {
    let variants = crate::variants::all();
    let mut out = [0; Backend::ALL.len()];
    for v in &variants {
        let needs = Need::of(v.features, v.downlevel);
        for (n, b) in out.iter_mut().zip(Backend::ALL) {
            *n += usize::from(may_run(b, &needs));
        }
    }
    (out, variants.len())
}

/// The table as Markdown, as `README.md` has it, with the count of variants each backend
/// may run.
pub(crate) fn markdown() -> String {
    let mut s = String::from("| variant needs |");
    for b in Backend::ALL {
        let _ = write!(s, " {} |", b.name());
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(Backend::ALL.len()));
    s.push_str("\n| (translated to) |");
    for b in Backend::ALL {
        let _ = write!(s, " {} |", b.language());
    }
    s.push_str("\n| float32 | yes | yes | yes | yes |\n");
    for n in Need::ALL {
        let _ = write!(s, "| {} |", n.name());
        for b in Backend::ALL {
            let cell = match n.offer(b) {
                Offer::Always => "yes".to_string(),
                Offer::Some(which) => which.to_string(),
                Offer::Never(why) => format!("no: {why}"),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    let (counts, total) = counts();
    let _ = write!(s, "| variants it may run, of {total} |");
    for n in counts {
        let _ = write!(s, " {n} |");
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "README.md";
    const BEGIN: &str = "<!-- support table: generated by src/support.rs -->\n";
    const END: &str = "<!-- end of the support table -->\n";

    /// README.md shows the table the naga test follows; `GPUMEM_BLESS=1` rewrites it.
    #[test]
    fn readme_has_the_support_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(README);
        let text = std::fs::read_to_string(&path).expect("crates/kernels/README.md");
        let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
            panic!("{README} has no support table between {BEGIN:?} and {END:?}");
        };
        let (before, after) = (&text[..b + BEGIN.len()], &text[e..]);
        let want = format!("{before}{}{after}", markdown());
        if want == text {
            return;
        }
        if crate::variants::bless() {
            std::fs::write(&path, want).expect("README.md is writable");
            return;
        }
        panic!(
            "{README}'s support table is not src/support.rs's; run `GPUMEM_BLESS=1 cargo test \
             -p gpumem-kernels support` to rewrite it. Expected:\n{}",
            markdown()
        );
    }

    #[test]
    fn every_backend_runs_float32_and_packed_float16_somewhere() {
        for b in Backend::ALL {
            assert!(may_run(b, &[]) && may_run(b, &[Need::F16Packed]), "{b:?}");
        }
        assert!(!may_run(Backend::Metal, &[Need::F64]));
        assert!(!may_run(Backend::Gl, &[Need::F16Packed, Need::Subgroups]));
    }
}
