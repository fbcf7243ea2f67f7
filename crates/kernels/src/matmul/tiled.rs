//! The register-tiled matmul's WGSL, generated at pipeline creation (deterministic, well
//! under a millisecond): straight-line code with one variable per accumulator, which
//! nobody should write by hand.
//!
//! Why generated: llvmpipe does not unroll loops over register tiles, arrays of
//! accumulators (or matrices) compile 3-10x slower and run slower, and an unrolled epilogue
//! (TM copies of the masked, accumulating store) dominates compile time; so the k loop is
//! straight-line code and the epilogue is a loop that stores row 0 and shifts the rows up.
//!
//! With every operand float32 the text is exactly what `tools/gen_tiled.py 32 2` wrote
//! before this generator replaced it (but for the first comment line). Other storage
//! (float16, native or packed; float64) changes only the declarations, the vector type
//! (`vec4<f64>` when computing in f64) and routes loads and stores of the affected
//! operands through `ld*`/`st*` helpers.

use std::fmt::Write as _;

use crate::shader::{Compute, Store, enables};

/// Rows of C per tile (a multiple of 32) and vec4 columns per invocation; `TILE_M` and
/// `COLS_PER_INVOCATION` in matmul.rs must match.
pub(crate) const TM: usize = 32;
pub(crate) const TN4: usize = 2;

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

/// The vec4 array type of a matrix operand.
fn vec_decl(store: Store) -> &'static str {
    match store {
        Store::F32 => "vec4<f32>",
        Store::F64 => "vec4<f64>",
        Store::F16 => "vec4<f16>",
        Store::F16Packed => "vec2<u32>",
        // Never generated: labels are no matmul operand.
        Store::U32 => "vec4<u32>",
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
                format!("{x}[i] = {}(v);", vec_decl(other)),
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
        vec_decl(spec.a),
        vec_decl(spec.b),
        vec_decl(spec.c),
        if all_f32 {
            String::new()
        } else {
            format!("\n{}", helpers(g))
        },
    );
    g.w(h);
}

fn entry(g: &mut Gen, form: &str) {
    let sub = g.spec.sub;
    let (tm, tn) = (TM, 4 * TN4);
    g.w("@compute @workgroup_size(WG)");
    g.w(format!(
        "fn mm_{form}(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,"
    ));
    g.w(format!(
        "         @builtin(local_invocation_index) li: u32{}) {{",
        if sub {
            ", @builtin(subgroup_invocation_id) lane: u32"
        } else {
            ""
        }
    ));
    g.w(format!("    let tiles_m = (p.m + {}u) / {tm}u;", tm - 1));
    g.w(format!(
        "    let tiles_n = (p.n + {tn}u * WG - 1u) / ({tn}u * WG);"
    ));
    g.w("    for (var ty = wg.y; ty < tiles_m; ty += nwg.y) {");
    g.w("        for (var tx = wg.x; tx < tiles_n; tx += nwg.x) {");
    g.w(format!(
        "            tile_{form}(ty * {tm}u, tx * {tn}u * WG + 4u * li{});",
        if sub { ", lane" } else { "" }
    ));
    g.w("        }");
    g.w("    }");
    g.w("}");
    g.w("");
}

fn tile(g: &mut Gen, form: &str) {
    let sub = g.spec.sub;
    let v = g.v;
    let (ta, tb) = (form.starts_with('t'), form.ends_with('t'));
    let rb = TM / 4;
    let (sa, sb) = (g.spec.a, g.spec.b);
    g.w(format!(
        "fn tile_{form}(row0: u32, col0: u32{}) {{",
        if sub { ", lane: u32" } else { "" }
    ));
    if sub {
        g.w("    let q = lane % 8u;");
    }
    // A addressing
    if !ta {
        g.w("    let last_row = p.m - 1u;");
        if sub {
            for t in 0..TM / 8 {
                g.w(format!(
                    "    let ar{t} = p.a_off + min(row0 + q + {}u, last_row) * p.a_stride;",
                    8 * t
                ));
            }
        } else {
            for i in 0..TM {
                g.w(format!(
                    "    let ar{i} = p.a_off + min(row0 + {i}u, last_row) * p.a_stride;"
                ));
            }
        }
    } else {
        g.w("    let last_r4 = (p.m - 1u) / 4u;");
        if sub {
            for s in 0..rb / 8 {
                g.w(format!(
                    "    let ac{s} = p.a_off + min(row0 / 4u + q + {}u, last_r4);",
                    8 * s
                ));
            }
        } else {
            for blk in 0..rb {
                g.w(format!(
                    "    let ac{blk} = p.a_off + min(row0 / 4u + {blk}u, last_r4);"
                ));
            }
        }
    }
    // B addressing
    if !tb {
        g.w("    let last_c4 = (p.n - 1u) / 4u;");
        for j in 0..TN4 {
            g.w(format!(
                "    let bc{j} = p.b_off + min(col0 / 4u + {j}u * WG, last_c4);"
            ));
        }
    } else {
        g.w("    let last_col = p.n - 1u;");
        for j in 0..TN4 {
            for cc in 0..4 {
                g.w(format!(
                    "    let bc{j}_{cc} = p.b_off + min(col0 + {}u * WG + {cc}u, last_col) * p.b_stride;",
                    4 * j
                ));
            }
        }
    }
    for i in 0..TM {
        let line: Vec<String> = (0..TN4).map(|j| format!("var c{i}_{j} = {v}();")).collect();
        g.w(format!("    {}", line.join(" ")));
    }
    g.w("    for (var kk = 0u; kk < p.k / 4u; kk++) {");
    // B values: bq_j = vec4 over 4 columns at k row q
    if !tb {
        g.w("        let kb = kk * 4u * p.b_stride;");
        for qq in 0..4 {
            let line: Vec<String> = (0..TN4)
                .map(|j| {
                    format!(
                        "let b{qq}_{j} = {};",
                        g.ld("b", sb, &format!("bc{j} + kb + {qq}u * p.b_stride"))
                    )
                })
                .collect();
            g.w(format!("        {}", line.join(" ")));
        }
    } else {
        for j in 0..TN4 {
            let line: Vec<String> = (0..4)
                .map(|cc| {
                    format!(
                        "let v{j}_{cc} = {};",
                        g.ld("b", sb, &format!("bc{j}_{cc} + kk"))
                    )
                })
                .collect();
            g.w(format!("        {}", line.join(" ")));
            for (qq, comp) in ["x", "y", "z", "w"].iter().enumerate() {
                g.w(format!(
                    "        let b{qq}_{j} = {v}(v{j}_0.{comp}, v{j}_1.{comp}, v{j}_2.{comp}, v{j}_3.{comp});"
                ));
            }
        }
    }
    // A values and FMAs
    let comps = ["x", "y", "z", "w"];
    if !ta {
        if sub {
            for t in 0..TM / 8 {
                g.w(format!(
                    "        let m{t} = {};",
                    g.ld("a", sa, &format!("ar{t} + kk"))
                ));
            }
        }
        for i in 0..TM {
            let src = if sub {
                format!("subgroupBroadcast(m{}, {}u)", i / 8, i % 8)
            } else {
                g.ld("a", sa, &format!("ar{i} + kk"))
            };
            g.w(format!("        let a{i} = {src};"));
            for (qq, comp) in comps.iter().enumerate() {
                let line: Vec<String> = (0..TN4)
                    .map(|j| format!("c{i}_{j} = fma({v}(a{i}.{comp}), b{qq}_{j}, c{i}_{j});"))
                    .collect();
                g.w(format!("        {}", line.join(" ")));
            }
        }
    } else {
        g.w("        let ka = kk * 4u * p.a_stride;");
        if sub {
            for s in 0..rb / 8 {
                let line: Vec<String> = (0..4)
                    .map(|t| {
                        format!(
                            "let m{s}_{t} = {};",
                            g.ld("a", sa, &format!("ac{s} + ka + {t}u * p.a_stride"))
                        )
                    })
                    .collect();
                g.w(format!("        {}", line.join(" ")));
            }
        }
        for blk in 0..rb {
            for t in 0..4 {
                let src = if sub {
                    format!("subgroupBroadcast(m{}_{t}, {}u)", blk / 8, blk % 8)
                } else {
                    g.ld("a", sa, &format!("ac{blk} + ka + {t}u * p.a_stride"))
                };
                g.w(format!("        let x{blk}_{t} = {src};"));
            }
            for (r, rc) in comps.iter().enumerate() {
                let i = 4 * blk + r;
                for qq in 0..4 {
                    let line: Vec<String> = (0..TN4)
                        .map(|j| {
                            format!("c{i}_{j} = fma({v}(x{blk}_{qq}.{rc}), b{qq}_{j}, c{i}_{j});")
                        })
                        .collect();
                    g.w(format!("        {}", line.join(" ")));
                }
            }
        }
    }
    g.w("    }");
    for j in 0..TN4 {
        g.w(format!("    let bias{j} = bias4(col0 + {}u * WG);", 4 * j));
    }
    // The epilogue stores row 0 and shifts the rows up, in a loop: one copy of the store
    // code instead of TM (5x less compile time on llvmpipe, same speed).
    g.w(format!(
        "    for (var i = 0u; i < min({TM}u, p.m - row0); i++) {{"
    ));
    let line: Vec<String> = (0..TN4)
        .map(|j| format!("put4(row0 + i, col0 + {}u * WG, c0_{j} + bias{j});", 4 * j))
        .collect();
    g.w(format!("        {}", line.join(" ")));
    for r in 0..TM - 1 {
        let line: Vec<String> = (0..TN4)
            .map(|j| format!("c{r}_{j} = c{}_{j};", r + 1))
            .collect();
        g.w(format!("        {}", line.join(" ")));
    }
    g.w("    }");
    g.w("}");
    g.w("");
}

/// The WGSL of the tiled kernel `spec`, entry points `mm_nn`, `mm_tn`, `mm_nt`.
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
    for form in ["nn", "tn", "nt"] {
        tile(&mut g, form);
        entry(&mut g, form);
    }
    let mut out = g.lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// The float32 text after the first line is byte for byte what
    /// `tools/gen_tiled.py 32 2 {plain,subgroup}` committed (hashes of those files minus
    /// their first line), so speed and compile time are those measured with it.
    #[test]
    fn float32_text_is_the_python_generators() {
        for (sub, len, hash) in [
            (false, 60347, 0x0556_7b23_814c_db8c_u64),
            (true, 58019, 0xe4a7_d3e2_b6bf_478b),
        ] {
            let s = source(Spec::f32(sub));
            let rest = &s[s.find('\n').expect("lines") + 1..];
            assert_eq!(
                (rest.len(), fnv1a(rest.as_bytes())),
                (len, hash),
                "sub={sub}"
            );
        }
    }

    #[test]
    fn deterministic_and_every_variant_has_the_entry_points() {
        for sub in [false, true] {
            let s = source(Spec::f32(sub));
            assert_eq!(s, source(Spec::f32(sub)));
            for e in ["fn mm_nn(", "fn mm_tn(", "fn mm_nt(", "fn tile_nt("] {
                assert!(s.contains(e), "{e}");
            }
            assert_eq!(s.contains("subgroupBroadcast"), sub);
            assert!(!s.contains("ldc(") && !s.contains("enable f16"));
        }
        let half = source(Spec {
            a: Store::F16,
            c: Store::F16Packed,
            ..Spec::f32(true)
        });
        assert!(half.starts_with("enable f16;\n"));
        assert!(half.contains("lda(ar0 + kk)") && half.contains("stc(at, v);"));
        assert!(half.contains("b[bc0 + kb + 0u * p.b_stride]"));
    }
}
