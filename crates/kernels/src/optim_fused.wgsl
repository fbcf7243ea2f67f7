// Foreach Adam's update and its denominator in one pass (optim_fused.rs): the update of
// `adam` in optim.wgsl, then d = sqrt(v) * scale + eps from the updated v, as `adam_denom`
// computes it, in the same f32 arithmetic. float32 quads from the generated prelude
// (param, grad, m, v, d at bindings 0–4); offsets are multiples of 4; invocation 0 does
// the last 1–3 values.

struct Params {
    n: u32, o_param: u32, o_grad: u32, o_m: u32,
    o_v: u32, o_d: u32, p0: u32, p1: u32,
    f: vec4<f32>,   // lr, beta1, beta2, eps
    g: vec4<f32>,   // the bias corrections, each split in two f32s (as `adam`'s)
    h: vec4<f32>,   // the denominator's scale and eps, each split in two (as `adam_denom`'s)
}

@group(0) @binding(5) var<uniform> p: Params;

@compute @workgroup_size(64)
fn adam_with_denom(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) li: u32) {
    let lr = p.f.x;
    let b1 = p.f.y;
    let b2 = p.f.z;
    let eps = p.f.w;
    let bc1 = p.g.x + p.g.z;
    let bc2 = p.g.y + p.g.w;
    let scale = p.h.x + p.h.z;
    let deps = p.h.y + p.h.w;
    let first = (wg.y * nwg.x + wg.x) * 64u + li;
    let quads = p.n >> 2u;
    for (var u = first; u < quads; u += nwg.x * nwg.y * 64u) {
        let gi = grad[(p.o_grad >> 2u) + u];
        let mi = b1 * m[(p.o_m >> 2u) + u] + (1.0 - b1) * gi;
        let vi = b2 * v[(p.o_v >> 2u) + u] + (1.0 - b2) * gi * gi;
        m[(p.o_m >> 2u) + u] = mi;
        v[(p.o_v >> 2u) + u] = vi;
        let q = (p.o_param >> 2u) + u;
        param[q] = param[q] - (lr / bc1) * mi / (sqrt(vi) / bc2 + eps);
        d[(p.o_d >> 2u) + u] = sqrt(vi) * scale + deps;
    }
    if (first == 0u) {
        for (var i = 4u * quads; i < p.n; i++) {
            let gi = ld_grad(p.o_grad + i);
            let mi = b1 * ld_m(p.o_m + i) + (1.0 - b1) * gi;
            let vi = b2 * ld_v(p.o_v + i) + (1.0 - b2) * gi * gi;
            st_m(p.o_m + i, mi);
            st_v(p.o_v + i, vi);
            st_param(p.o_param + i, ld_param(p.o_param + i) - (lr / bc1) * mi / (sqrt(vi) / bc2 + eps));
            st_d(p.o_d + i, sqrt(vi) * scale + deps);
        }
    }
}
