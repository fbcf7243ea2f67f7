// Column sums of a rows × cols matrix in two deterministic levels: `colsum_partial`
// sums fixed groups of rows_per_group rows into partial[group][col] (stored in T),
// `colsum_final` adds the groups in order. Same input, same order, same bits, on any
// device. Bindings x0, x1 and their accessors come from the generated prelude.

struct Params {
    rows: u32, cols: u32, groups: u32, rows_per_group: u32,
    off: vec4<u32>,   // first element of x0, x1 inside their bindings
    flags: vec4<u32>, // flags.x = 1: accumulate into the destination
    p: vec4<u32>,
}

@group(0) @binding(2) var<uniform> p: Params;

// x0 = src rows, x1 = partial [groups × cols]
@compute @workgroup_size(64)
fn colsum_partial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let col_blocks = (p.cols + 63u) / 64u;
    for (var g = wg.y; g < p.groups; g += nwg.y) {
        for (var cb = wg.x; cb < col_blocks; cb += nwg.x) {
            let c = cb * 64u + li;
            if (c < p.cols) {
                let r0 = g * p.rows_per_group;
                let r1 = min(r0 + p.rows_per_group, p.rows);
                var s = T(0.0);
                for (var r = r0; r < r1; r++) {
                    s += ld_x0(p.off.x + r * p.cols + c);
                }
                st_x1(p.off.y + g * p.cols + c, s);
            }
        }
    }
}

// x0 = partial [groups × cols], x1 = destination [cols] (walked by its units)
@compute @workgroup_size(64)
fn colsum_final(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let units = units_x1(p.off.y, p.cols);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_x1(p.off.y, p.cols, u);
        for (var c = e.x; c < e.x + e.y; c++) {
            var s = T(0.0);
            for (var g = 0u; g < p.groups; g++) {
                s += ld_x0(p.off.x + g * p.cols + c);
            }
            if (p.flags.x != 0u) {
                s += ld_x1(p.off.y + c);
            }
            st_x1(p.off.y + c, s);
        }
    }
}
