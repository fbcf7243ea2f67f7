// Elementwise kernels over flat arrays, computed in T. The bindings x0 and x1 and their
// accessors (ld_x0, st_x0, units_x0, unit_x0, ...) come from the prelude generated for
// the operands' storage (shader.rs). Each kernel walks the units of the operand it writes
// (elements, or the words of packed float16, so no two invocations write one word) with a
// grid-stride loop over a 2-D grid, so any n fits the workgroup-count limit.

struct Params {
    n: u32, p0: u32, p1: u32, p2: u32,
    off: vec4<u32>,   // first element of x0, x1 inside their bindings
    f: vec4<f32>,     // scalars: f.x = factor for `scale` and `unscale_check`
    g: vec4<f32>,
}

@group(0) @binding(2) var<uniform> p: Params;

// x1 = max(x0, 0)
@compute @workgroup_size(64)
fn relu(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let units = units_x1(p.off.y, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_x1(p.off.y, p.n, u);
        for (var i = e.x; i < e.x + e.y; i++) {
            st_x1(p.off.y + i, max(ld_x0(p.off.x + i), T(0.0)));
        }
    }
}

// x0 (the gradient) *= x1 (the activation) > 0
@compute @workgroup_size(64)
fn relu_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let units = units_x0(p.off.x, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_x0(p.off.x, p.n, u);
        for (var i = e.x; i < e.x + e.y; i++) {
            if (ld_x1(p.off.y + i) <= T(0.0)) {
                st_x0(p.off.x + i, T(0.0));
            }
        }
    }
}

// x0 *= f.x
@compute @workgroup_size(64)
fn scale(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let units = units_x0(p.off.x, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_x0(p.off.x, p.n, u);
        for (var i = e.x; i < e.x + e.y; i++) {
            st_x0(p.off.x + i, ld_x0(p.off.x + i) * T(p.f.x));
        }
    }
}

// x0 += x1
@compute @workgroup_size(64)
fn add(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let units = units_x0(p.off.x, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_x0(p.off.x, p.n, u);
        for (var i = e.x; i < e.x + e.y; i++) {
            st_x0(p.off.x + i, ld_x0(p.off.x + i) + ld_x1(p.off.y + i));
        }
    }
}

// x0 *= f.x; x1[0] = 1 if any result is infinite or NaN. Every invocation that finds one
// stores the same value, so the unordered stores agree (x1 is never packed float16).
@compute @workgroup_size(64)
fn unscale_check(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let units = units_x0(p.off.x, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_x0(p.off.x, p.n, u);
        for (var i = e.x; i < e.x + e.y; i++) {
            let v = ld_x0(p.off.x + i) * T(p.f.x);
            st_x0(p.off.x + i, v);
            if (nonfinite_t(v)) {
                st_x1(p.off.y, T(1.0));
            }
        }
    }
}
