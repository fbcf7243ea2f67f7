//! WGSL generated per element type (the pipelines built from it are cached in `pipeline.rs`).
//!
//! A kernel's storage bindings may hold float32, float16 or float64 values (or u32
//! labels). The hand-written `.wgsl` files compute in `T` (f32, or f64 when any operand is
//! float64) and reach their operands only through accessors that this module generates
//! for each binding, in a prelude put in front of the file:
//!
//! * `ld_X(i) -> T` and `st_X(i, v)` read and write element `i` of binding `X`;
//! * `units_X(off, n)` and `unit_X(off, n, u)` say which elements one invocation may
//!   write without racing another: one element per unit, or, for packed float16, the one
//!   or two elements of one u32 word (`unit_X` returns the first element, relative to
//!   `off`, and how many). Kernels that write a binding loop over its units.
//!
//! float16 is stored natively (`array<f16>`, `enable f16;`) where the device has
//! `SHADER_F16` and [`crate::KernelLimits::shader_f16`] allows it, and as two halves of a
//! `u32` (`pack2x16float` / `unpack2x16float`) elsewhere. A packed store of one element is
//! a read-modify-write of its word that keeps the other half's bits; it is only correct
//! because no two invocations of one dispatch ever write the same word (units), and
//! dispatches in one pass see each other's writes in order.
//!
//! float64 needs `SHADER_F64`; without it a kernel call returns
//! [`crate::KernelError::Unsupported`] naming the feature. WGSL's `exp` and `log` are not
//! defined for f64 on Vulkan (GLSL.std.450 is 16/32-bit only), so the prelude has `exp_t`
//! and `log_t` in `T`, written out for f64 (range reduction and a series, < 1e-15 relative).

use std::fmt::Write as _;

use crate::error::KernelError;
use crate::view::DType;

/// How one binding's elements are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Store {
    F32,
    F64,
    /// `array<f16>` (needs `SHADER_F16`).
    F16,
    /// float16 pairs packed in `array<u32>`.
    F16Packed,
    U32,
}

impl Store {
    /// The WGSL element type of the binding's array.
    pub fn elem(self) -> &'static str {
        match self {
            Store::F32 => "f32",
            Store::F64 => "f64",
            Store::F16 => "f16",
            Store::F16Packed | Store::U32 => "u32",
        }
    }

    pub fn tag(self) -> &'static str {
        match self {
            Store::F32 => "f32",
            Store::F64 => "f64",
            Store::F16 => "f16",
            Store::F16Packed => "f16p",
            Store::U32 => "u32",
        }
    }
}

/// The type a kernel computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Compute {
    F32,
    F64,
}

impl Compute {
    pub fn of(stores: &[Store]) -> Compute {
        if stores.contains(&Store::F64) {
            Compute::F64
        } else {
            Compute::F32
        }
    }

    pub fn wgsl(self) -> &'static str {
        match self {
            Compute::F32 => "f32",
            Compute::F64 => "f64",
        }
    }

    /// The storage of values of this type.
    pub fn store(self) -> Store {
        match self {
            Compute::F32 => Store::F32,
            Compute::F64 => Store::F64,
        }
    }

    /// Bytes per value of scratch buffers in this type.
    pub fn size(self) -> u64 {
        match self {
            Compute::F32 => 4,
            Compute::F64 => 8,
        }
    }
}

/// The storage of `dtype` on this device, or why it has none.
pub(crate) fn store_for(
    device: &wgpu::Device,
    f16_native: bool,
    dtype: DType,
) -> Result<Store, KernelError> {
    Ok(match dtype {
        DType::F32 => Store::F32,
        // Labels: int64 ones are read as pairs of u32 words.
        DType::U32 | DType::I64 => Store::U32,
        DType::F16 if f16_native && device.features().contains(wgpu::Features::SHADER_F16) => {
            Store::F16
        }
        DType::F16 => Store::F16Packed,
        DType::F64 => {
            if !device.features().contains(wgpu::Features::SHADER_F64) {
                return Err(KernelError::Unsupported(format!(
                    "float64 kernels need the wgpu feature SHADER_F64, which the adapter \"{}\" \
                     ({:?}) does not offer",
                    device.adapter_info().name,
                    device.adapter_info().backend
                )));
            }
            Store::F64
        }
    })
}

/// `enable f16;` when any binding is native float16 (it must come first in the module).
pub(crate) fn enables(stores: &[Store]) -> &'static str {
    if stores.contains(&Store::F16) {
        "enable f16;\n"
    } else {
        ""
    }
}

/// How a prelude declares its bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Layout {
    /// `array<f32>` etc.: any binding size.
    Scalar,
    /// `array<vec4<f32>>` etc. (`vec2<u32>` for packed float16): loads and stores of four
    /// values at once, about 3× cheaper per value on llvmpipe. Every binding must hold
    /// whole quads (the planner rounds binding sizes up where the buffer allows).
    Quads,
}

/// The prelude for the hand-written kernels: `alias T`, one declared binding with its
/// accessors per `(name, store)` (bindings 0, 1, …) and `exp_t` / `log_t` / `nonfinite_t`.
///
/// Accessors of binding `X`: `ld_X(i)`, `st_X(i, v)` (element `i`), `ld4_X(q)`, `st4_X(q,
/// v)` (elements `4q .. 4q + 4`, one quad), and `units_X` / `unit_X` (elements, or words
/// of packed float16; see the module docs). A quad holds whole words, so an invocation
/// that owns a quad may write its elements one by one.
pub(crate) fn prelude(compute: Compute, bindings: &[(&str, Store)], layout: Layout) -> String {
    let stores: Vec<Store> = bindings.iter().map(|b| b.1).collect();
    let t = compute.wgsl();
    let mut s = String::new();
    s.push_str(enables(&stores));
    let _ = writeln!(
        s,
        "// Generated by gpumem-kernels (shader.rs): bindings and accessors.\nalias T = {t};\n"
    );
    for (i, &(name, store)) in bindings.iter().enumerate() {
        let ty = match layout {
            Layout::Scalar => store.elem().to_string(),
            Layout::Quads => quad_type(store).to_string(),
        };
        let _ = writeln!(
            s,
            "@group(0) @binding({i}) var<storage, read_write> {name}: array<{ty}>;"
        );
        s.push_str(&accessors(name, store, compute, layout));
    }
    s.push_str(&math(compute));
    s
}

/// The WGSL type of one quad of `store` (a matrix operand's vec4 element).
pub(crate) fn quad_type(store: Store) -> &'static str {
    match store {
        Store::F32 => "vec4<f32>",
        Store::F64 => "vec4<f64>",
        Store::F16 => "vec4<f16>",
        Store::F16Packed => "vec2<u32>",
        Store::U32 => "vec4<u32>",
    }
}

fn accessors(x: &str, store: Store, compute: Compute, layout: Layout) -> String {
    let t = compute.wgsl();
    let e = store.elem();
    let quads = layout == Layout::Quads;
    // The element's place: `x[i]`, or component i % 4 of quad i / 4. For packed float16,
    // the u32 word holding element i.
    let (at, word) = if quads {
        (
            format!("{x}[i >> 2u][i & 3u]"),
            format!("{x}[i >> 2u][(i >> 1u) & 1u]"),
        )
    } else {
        (format!("{x}[i]"), format!("{x}[i >> 1u]"))
    };
    let mut s = match store {
        Store::U32 => format!(
            "fn ld_{x}(i: u32) -> u32 {{ return {at}; }}\n\
             fn st_{x}(i: u32, val: u32) {{ {at} = val; }}\n"
        ),
        Store::F16Packed => format!(
            "fn ld_{x}(i: u32) -> {t} {{ return {t}(unpack2x16float({word})[i & 1u]); }}\n\
             // Writes one half of a word, keeping the other half's bits (the caller owns the word).\n\
             fn st_{x}(i: u32, val: {t}) {{\n\
             \x20   let shift = (i & 1u) * 16u;\n\
             \x20   let h = (pack2x16float(vec2<f32>(f32(val), 0.0)) & 0xffffu) << shift;\n\
             \x20   {word} = ({word} & ~(0xffffu << shift)) | h;\n\
             }}\n"
        ),
        _ => format!(
            "fn ld_{x}(i: u32) -> {t} {{ return {t}({at}); }}\n\
             fn st_{x}(i: u32, val: {t}) {{ {at} = {e}(val); }}\n"
        ),
    };
    // Quads.
    s.push_str(&match (store, quads) {
        (Store::U32, _) => String::new(),
        (Store::F16Packed, true) => format!(
            "fn ld4_{x}(q: u32) -> vec4<{t}> {{\n\
             \x20   let w = {x}[q];\n\
             \x20   return vec4<{t}>(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)));\n\
             }}\n\
             fn st4_{x}(q: u32, val4: vec4<{t}>) {{\n\
             \x20   {x}[q] = vec2<u32>(pack2x16float(vec2<f32>(val4.xy)), pack2x16float(vec2<f32>(val4.zw)));\n\
             }}\n"
        ),
        (Store::F16Packed, false) => format!(
            "fn ld4_{x}(q: u32) -> vec4<{t}> {{\n\
             \x20   return vec4<{t}>(vec4<f32>(unpack2x16float({x}[2u * q]), unpack2x16float({x}[2u * q + 1u])));\n\
             }}\n\
             fn st4_{x}(q: u32, val4: vec4<{t}>) {{\n\
             \x20   {x}[2u * q] = pack2x16float(vec2<f32>(val4.xy));\n\
             \x20   {x}[2u * q + 1u] = pack2x16float(vec2<f32>(val4.zw));\n\
             }}\n"
        ),
        (_, true) => format!(
            "fn ld4_{x}(q: u32) -> vec4<{t}> {{ return vec4<{t}>({x}[q]); }}\n\
             fn st4_{x}(q: u32, val4: vec4<{t}>) {{ {x}[q] = vec4<{e}>(val4); }}\n"
        ),
        (_, false) => format!(
            "fn ld4_{x}(q: u32) -> vec4<{t}> {{\n\
             \x20   return vec4<{t}>({t}({x}[4u * q]), {t}({x}[4u * q + 1u]), {t}({x}[4u * q + 2u]), {t}({x}[4u * q + 3u]));\n\
             }}\n\
             fn st4_{x}(q: u32, val4: vec4<{t}>) {{\n\
             \x20   {x}[4u * q] = {e}(val4.x);\n\
             \x20   {x}[4u * q + 1u] = {e}(val4.y);\n\
             \x20   {x}[4u * q + 2u] = {e}(val4.z);\n\
             \x20   {x}[4u * q + 3u] = {e}(val4.w);\n\
             }}\n"
        ),
    });
    // Units.
    s.push_str(&if store == Store::F16Packed {
        format!(
            "fn units_{x}(off: u32, n: u32) -> u32 {{\n\
             \x20   if (n == 0u) {{ return 0u; }}\n\
             \x20   return ((off + n - 1u) >> 1u) - (off >> 1u) + 1u;\n\
             }}\n\
             fn unit_{x}(off: u32, n: u32, u: u32) -> vec2<u32> {{\n\
             \x20   let w = (off >> 1u) + u;\n\
             \x20   let first = max(2u * w, off);\n\
             \x20   let last = min(2u * w + 1u, off + n - 1u);\n\
             \x20   return vec2<u32>(first - off, last - first + 1u);\n\
             }}\n"
        )
    } else {
        format!(
            "fn units_{x}(off: u32, n: u32) -> u32 {{ return n; }}\n\
             fn unit_{x}(off: u32, n: u32, u: u32) -> vec2<u32> {{ return vec2<u32>(u, 1u); }}\n"
        )
    });
    s
}

/// `st2_X(i, v)` for a binding declared as scalars: elements `i` and `i + 1`. For packed
/// float16 `i` must be even, and the pair is one whole-word store (no read-modify-write):
/// what row kernels use when every row covers whole words.
pub(crate) fn pair_store(x: &str, store: Store, compute: Compute) -> String {
    let t = compute.wgsl();
    if store == Store::F16Packed {
        format!(
            "fn st2_{x}(i: u32, val2: vec2<{t}>) {{ {x}[i >> 1u] = pack2x16float(vec2<f32>(val2)); }}\n"
        )
    } else {
        format!(
            "fn st2_{x}(i: u32, val2: vec2<{t}>) {{\n\
             \x20   st_{x}(i, val2.x);\n\
             \x20   st_{x}(i + 1u, val2.y);\n\
             }}\n"
        )
    }
}

/// Quads of the elements `off .. off + n` of a binding, and the elements of quad `u` of
/// them (first, relative to `off`, and count): what flat kernels walk.
const QUAD_HELPERS: &str = include_str!("shader/quad_helpers.wgsl");
/// `exp_t`, `log_t` and `nonfinite_t` in f32: WGSL's own.
const F32_MATH: &str = include_str!("shader/f32_math.wgsl");
/// The same in f64, written out: Vulkan's GLSL.std.450 Exp/Log take 16/32-bit floats only.
const F64_MATH: &str = include_str!("shader/f64_math.wgsl");

/// The quad helpers and `exp_t` / `log_t` / `nonfinite_t` in the compute type.
fn math(compute: Compute) -> String {
    let mut s = QUAD_HELPERS.to_string();
    s.push_str(match compute {
        Compute::F32 => F32_MATH,
        Compute::F64 => F64_MATH,
    });
    s
}
