//! The tile functions and entry points of the tiled kernel, one form (`nn`, `tn`, `nt`)
//! at a time: addressing, the straight-line k loop, the epilogue.

use super::{Gen, TM, TN4};

/// The vec4 components, in order.
const COMPS: [&str; 4] = ["x", "y", "z", "w"];

/// `mm_{form}`: walks the tiles of C with grid-stride loops and calls `tile_{form}`.
pub(super) fn entry(g: &mut Gen, form: &str) {
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

/// `tile_{form}`: one invocation's TM × 4·TN4 values of C.
pub(super) fn tile(g: &mut Gen, form: &str) {
    let (ta, tb) = (form.starts_with('t'), form.ends_with('t'));
    g.w(format!(
        "fn tile_{form}(row0: u32, col0: u32{}) {{",
        if g.spec.sub { ", lane: u32" } else { "" }
    ));
    if g.spec.sub {
        g.w("    let q = lane % 8u;");
    }
    if ta {
        a_addresses_t(g);
    } else {
        a_addresses(g);
    }
    b_addresses(g, tb);
    for i in 0..TM {
        let v = g.v;
        let line: Vec<String> = (0..TN4).map(|j| format!("var c{i}_{j} = {v}();")).collect();
        g.w(format!("    {}", line.join(" ")));
    }
    g.w("    for (var kk = 0u; kk < p.k / 4u; kk++) {");
    if tb {
        b_values_t(g);
    } else {
        b_values(g);
    }
    if ta {
        a_fmas_t(g);
    } else {
        a_fmas(g);
    }
    g.w("    }");
    epilogue(g);
}

/// Where the tile's rows of an untransposed A start (a lane's share with subgroups).
fn a_addresses(g: &mut Gen) {
    g.w("    let last_row = p.m - 1u;");
    if g.spec.sub {
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
}

/// Where the tile's vec4 blocks of rows of a transposed A start.
fn a_addresses_t(g: &mut Gen) {
    let rb = TM / 4;
    g.w("    let last_r4 = (p.m - 1u) / 4u;");
    if g.spec.sub {
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

/// Where the invocation's columns of B start (rows of B when transposed).
fn b_addresses(g: &mut Gen, tb: bool) {
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
}

/// `b{q}_{j}`: B's vec4 of columns j at k row q of the step, loaded as is.
fn b_values(g: &mut Gen) {
    let sb = g.spec.b;
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
}

/// `b{q}_{j}` from a transposed B: four row loads transposed in registers.
fn b_values_t(g: &mut Gen) {
    let (sb, v) = (g.spec.b, g.v);
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
        for (qq, comp) in COMPS.iter().enumerate() {
            g.w(format!(
                "        let b{qq}_{j} = {v}(v{j}_0.{comp}, v{j}_1.{comp}, v{j}_2.{comp}, v{j}_3.{comp});"
            ));
        }
    }
}

/// A's values of the step (broadcast from the lanes that loaded them, with subgroups)
/// and the FMAs into every accumulator, untransposed A.
fn a_fmas(g: &mut Gen) {
    let (sa, v, sub) = (g.spec.a, g.v, g.spec.sub);
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
        for (qq, comp) in COMPS.iter().enumerate() {
            let line: Vec<String> = (0..TN4)
                .map(|j| format!("c{i}_{j} = fma({v}(a{i}.{comp}), b{qq}_{j}, c{i}_{j});"))
                .collect();
            g.w(format!("        {}", line.join(" ")));
        }
    }
}

/// The same for a transposed A, read a vec4 of rows at a time.
fn a_fmas_t(g: &mut Gen) {
    let (sa, v, sub) = (g.spec.a, g.v, g.spec.sub);
    let rb = TM / 4;
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
        for (r, rc) in COMPS.iter().enumerate() {
            let i = 4 * blk + r;
            for qq in 0..4 {
                let line: Vec<String> = (0..TN4)
                    .map(|j| format!("c{i}_{j} = fma({v}(x{blk}_{qq}.{rc}), b{qq}_{j}, c{i}_{j});"))
                    .collect();
                g.w(format!("        {}", line.join(" ")));
            }
        }
    }
}

/// Adds the bias and stores row 0, shifting the rows up, in a loop: one copy of the store
/// code instead of TM (5x less compile time on llvmpipe, same speed).
fn epilogue(g: &mut Gen) {
    for j in 0..TN4 {
        g.w(format!("    let bias{j} = bias4(col0 + {}u * WG);", 4 * j));
    }
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
