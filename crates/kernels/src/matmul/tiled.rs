//! The register-tiled matmul's WGSL, generated at pipeline creation (deterministic, well
//! under a millisecond): straight-line code with one variable per accumulator, which
//! nobody should write by hand.
//!
//! Why generated: llvmpipe does not unroll loops over register tiles, arrays of
//! accumulators (or matrices) compile 3-10x slower and run slower, and an unrolled epilogue
//! (TM copies of the masked, accumulating store) dominates compile time; so the k loop is
//! straight-line code and the epilogue is a loop that stores row 0 and shifts the rows up.
//!
//! Other storage than float32 (float16, native or packed; float64) changes only the
//! declarations, the vector type (`vec4<f64>` when computing in f64) and routes loads and
//! stores of the affected operands through `ld*`/`st*` helpers.
//!
//! Every variant the engine requests is committed under `generated/` and a test checks
//! that the generator still writes them byte for byte, so a change to the generator shows
//! as a diff of WGSL (`GPUMEM_BLESS=1 cargo test -p gpumem-kernels tiled` rewrites them).

mod body;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;

use crate::shader::{Compute, Store, enables, quad_type};

use self::body::{entry, tile};

/// Rows of C per tile (a multiple of 32) and vec4 columns per invocation.
pub(crate) const TM: usize = 32;
pub(crate) const TN4: usize = 2;
/// The entry points, one per form (`aᵀ·bᵀ` has none).
pub(crate) const ENTRY_POINTS: [&str; 3] = ["mm_nn", "mm_tn", "mm_nt"];
/// The pipeline constant that sets the workgroup size: invocations per workgroup.
pub(crate) const WG_OVERRIDE: &str = "WG";
/// Workgroup sizes the host sets (`matmul::workgroup_width`: a subgroup, clamped).
pub(crate) const WG_MIN: u32 = 8;
pub(crate) const WG_MAX: u32 = 64;

/// Which tiled kernel to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Spec {
    /// Share rows of A through `subgroupBroadcast`.
    pub sub: bool,
    pub a: Store,
    pub b: Store,
    pub c: Store,
    pub bias: Store,
}

impl Spec {
    pub fn f32(sub: bool) -> Spec {
        Spec {
            sub,
            a: Store::F32,
            b: Store::F32,
            c: Store::F32,
            bias: Store::F32,
        }
    }

    fn compute(&self) -> Compute {
        Compute::of(&[self.a, self.b, self.c, self.bias])
    }

    /// `plain/f32/f32/f32/f32`: the variant and each operand's storage (a, b, c, bias).
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            if self.sub { "subgroup" } else { "plain" },
            self.a.tag(),
            self.b.tag(),
            self.c.tag(),
            self.bias.tag()
        )
    }
}

struct Gen {
    lines: Vec<String>,
    spec: Spec,
    /// `vec4<f32>` or `vec4<f64>`.
    v: &'static str,
}

impl Gen {
    fn w(&mut self, s: impl Into<String>) {
        self.lines.push(s.into());
    }

    /// True when `store` is read and written as is (no conversion helper needed).
    fn direct(&self, store: Store) -> bool {
        matches!(
            (store, self.spec.compute()),
            (Store::F32, Compute::F32) | (Store::F64, Compute::F64)
        )
    }

    /// `x[idx]` for a vec4 operand, or its helper.
    fn ld(&self, x: &str, store: Store, idx: &str) -> String {
        if self.direct(store) {
            format!("{x}[{idx}]")
        } else {
            format!("ld{x}({idx})")
        }
    }
}

/// Load (and for C store) helpers for operands that are not read as is.
fn helpers(g: &Gen) -> String {
    let v = g.v;
    let mut s = String::new();
    for (x, store) in [("a", g.spec.a), ("b", g.spec.b), ("c", g.spec.c)] {
        if g.direct(store) {
            continue;
        }
        let (ld, st) = match store {
            Store::F16Packed => (
                format!(
                    "let w = {x}[i];\n    return {v}(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)));"
                ),
                format!(
                    "{x}[i] = vec2<u32>(pack2x16float(vec2<f32>(v.xy)), pack2x16float(vec2<f32>(v.zw)));"
                ),
            ),
            other => (
                format!("return {v}({x}[i]);"),
                format!("{x}[i] = {}(v);", quad_type(other)),
            ),
        };
        let _ = writeln!(s, "fn ld{x}(i: u32) -> {v} {{\n    {ld}\n}}");
        if x == "c" {
            let _ = writeln!(s, "fn st{x}(i: u32, v: {v}) {{\n    {st}\n}}");
        }
    }
    if !g.direct(g.spec.bias) {
        let t = g.spec.compute().wgsl();
        let body = match g.spec.bias {
            Store::F16Packed => {
                format!("return {t}(unpack2x16float(bias[i >> 1u])[i & 1u]);")
            }
            _ => format!("return {t}(bias[i]);"),
        };
        let _ = writeln!(s, "fn ldbias(i: u32) -> {t} {{\n    {body}\n}}");
    }
    s
}

fn header(g: &mut Gen) {
    let sub = g.spec.sub;
    let share = if sub {
        "lane q (q < 8) of each subgroup loads 1/8 of the A values of a k step and every lane\n\
         // gets the rest with subgroupBroadcast (constant lane ids), so loads of A drop 8x.\n\
         // Correct for any subgroup size >= 8: all invocations of a workgroup use the same rows."
    } else {
        "every invocation loads all A values of a k step itself (for devices without subgroups)."
    };
    let variant = if sub { "subgroup" } else { "plain" };
    let spec = g.spec;
    let all_f32 = spec == Spec::f32(sub);
    let (tn, tm, tn4) = (4 * TN4, TM, TN4);
    let v = g.v;
    let stores = [spec.a, spec.b, spec.c, spec.bias];
    let mut h = String::new();
    h.push_str(enables(&stores));
    let _ = writeln!(
        h,
        "// GENERATED by gpumem-kernels (src/matmul/tiled.rs, {tm} rows, {tn4} vec4 columns, {variant}) at pipeline creation."
    );
    if !all_f32 {
        let _ = writeln!(
            h,
            "// Storage: a {}, b {}, c {}, bias {}; computed in {}.",
            spec.a.tag(),
            spec.b.tag(),
            spec.c.tag(),
            spec.bias.tag(),
            spec.compute().wgsl()
        );
    }
    let bias_elem = spec.bias.elem();
    let bias_load = |idx: &str| {
        if g.direct(spec.bias) {
            format!("bias[{idx}]")
        } else {
            format!("ldbias({idx})")
        }
    };
    let (b0, b1, b2, b3) = (
        bias_load("min(at, last)"),
        bias_load("min(at + 1u, last)"),
        bias_load("min(at + 2u, last)"),
        bias_load("min(at + 3u, last)"),
    );
    let (acc_store, plain_store) = if g.direct(spec.c) {
        ("c[at] = c[at] + v;", "c[at] = v;")
    } else {
        ("stc(at, ldc(at) + v);", "stc(at, v);")
    };
    let _ = write!(
        h,
        "//
// Register-tiled matmul, f32: C[m x n] (+)= op(A) op(B) (+ bias), for NN, TN and NT.
// A workgroup of WG invocations owns {tm} rows x (WG * {tn}) columns of C; each invocation
// accumulates {tm} x {tn} values in vec4 registers and owns {tn4} vec4 columns, interleaved with
// its neighbours (4*li, 4*(li + WG), ...), so neighbours read neighbouring vec4s of B.
// Rows of A are shared by the whole workgroup: {share}
//
// No bounds checks in the k loop: rows past m and columns past n are clamped on load (they
// read valid memory of the same operand) and masked on store. The host guarantees k % 4 == 0
// and that offsets and strides of A, B and C are multiples of 4 elements (so n is too).

struct Params {{
    m: u32, n: u32, k: u32, flags: u32,       // flags: 1 = accumulate into C, 2 = add bias
    a_off: u32, a_stride: u32, a_unused: u32, // A: first vec4, row stride in vec4s
    b_off: u32, b_stride: u32, b_unused: u32, // B: same
    c_off: u32, c_stride: u32,                // C: first vec4, row stride in vec4s
    bias_off: u32, p0: u32, p1: u32, p2: u32,
}}

@group(0) @binding(0) var<storage, read_write> a: array<{}>;
@group(0) @binding(1) var<storage, read_write> b: array<{}>;
@group(0) @binding(2) var<storage, read_write> c: array<{}>;
@group(0) @binding(3) var<storage, read_write> bias: array<{bias_elem}>;
@group(0) @binding(4) var<uniform> p: Params;

// Invocations per workgroup, set by the host (a multiple of 8).
override WG: u32 = 8u;
{}
// bias[col..col + 4] (clamped to n columns), or zeros without a bias.
fn bias4(col: u32) -> {v} {{
    if ((p.flags & 2u) == 0u) {{
        return {v}();
    }}
    let last = p.bias_off + p.n - 1u;
    let at = p.bias_off + col;
    return {v}({b0}, {b1}, {b2}, {b3});
}}

// Stores one vec4 of C (adding the old value when accumulating) if it lies inside n.
fn put4(row: u32, col: u32, v: {v}) {{
    if (col < p.n) {{
        let at = p.c_off + row * p.c_stride + col / 4u;
        if ((p.flags & 1u) != 0u) {{
            {acc_store}
        }} else {{
            {plain_store}
        }}
    }}
}}
",
        quad_type(spec.a),
        quad_type(spec.b),
        quad_type(spec.c),
        if all_f32 {
            String::new()
        } else {
            format!("\n{}", helpers(g))
        },
    );
    g.w(h);
}

/// The WGSL of the tiled kernel `spec`, entry points [`ENTRY_POINTS`].
pub(crate) fn source(spec: Spec) -> String {
    let v = match spec.compute() {
        Compute::F32 => "vec4<f32>",
        Compute::F64 => "vec4<f64>",
    };
    let mut g = Gen {
        lines: Vec::new(),
        spec,
        v,
    };
    header(&mut g);
    for entry_point in ENTRY_POINTS {
        let form = &entry_point["mm_".len()..];
        tile(&mut g, form);
        entry(&mut g, form);
    }
    let mut out = g.lines.join("\n");
    out.push('\n');
    out
}
