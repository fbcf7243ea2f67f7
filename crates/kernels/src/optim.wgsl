// Optimizer steps over flat arrays, computed in T: quads of `param` per invocation, vec4s
// where every operand is aligned alike (like elementwise.wgsl). Bindings param, grad, m, v
// and their accessors come from the generated prelude; m and v are never packed float16
// (the host refuses it), so writing them element by element never races.

struct Params {
    n: u32,
    aligned: u32,     // 1: every operand's offset is ≡ param's (mod 4)
    p1: u32, p2: u32,
    off: vec4<u32>,   // first element of param, grad, m, v inside their bindings
    f: vec4<f32>,     // sgd: f.x = lr. adam: lr, beta1, beta2, eps
    g: vec4<f32>,     // adam: bias corrections 1 - beta1^t, sqrt(1 - beta2^t), and the
                      // parts of them below f32's precision (z, w) for computing in f64
}

@group(0) @binding(4) var<uniform> p: Params;

// param -= lr * grad
@compute @workgroup_size(64)
fn sgd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.x;
    let nq = quads(o, p.n);
    let lr = T(p.f.x);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            let q = (o + r.x) >> 2u;
            st4_param(q, ld4_param(q) - lr * ld4_grad((p.off.y + r.x) >> 2u));
        } else {
            var i = r.x;
            loop {
                st_param(o + i, ld_param(o + i) - lr * ld_grad(p.off.y + i));
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// PyTorch's Adam (no weight decay, no amsgrad):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
//   param -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
@compute @workgroup_size(64)
fn adam(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let lr = T(p.f.x);
    let b1 = T(p.f.y);
    let b2 = T(p.f.z);
    let eps = T(p.f.w);
    let bc1 = T(p.g.x) + T(p.g.z);
    let bc2 = T(p.g.y) + T(p.g.w);
    let o = p.off.x;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            let q = (o + r.x) >> 2u;
            let gi = ld4_grad((p.off.y + r.x) >> 2u);
            let mi = b1 * ld4_m((p.off.z + r.x) >> 2u) + (1.0 - b1) * gi;
            let vi = b2 * ld4_v((p.off.w + r.x) >> 2u) + (1.0 - b2) * gi * gi;
            st4_m((p.off.z + r.x) >> 2u, mi);
            st4_v((p.off.w + r.x) >> 2u, vi);
            st4_param(q, ld4_param(q) - (lr / bc1) * mi / (sqrt(vi) / bc2 + eps));
        } else {
            var i = r.x;
            loop {
                let gi = ld_grad(p.off.y + i);
                let mi = b1 * ld_m(p.off.z + i) + (1.0 - b1) * gi;
                let vi = b2 * ld_v(p.off.w + i) + (1.0 - b2) * gi * gi;
                st_m(p.off.z + i, mi);
                st_v(p.off.w + i, vi);
                st_param(o + i, ld_param(o + i) - (lr / bc1) * mi / (sqrt(vi) / bc2 + eps));
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}
