// Optimizer steps over flat f32 arrays (grid-stride loops, like elementwise.wgsl).

struct Params {
    n: u32, p0: u32, p1: u32, p2: u32,
    off: vec4<u32>,   // first element of x0..x3 inside their bindings
    f: vec4<f32>,     // sgd: f.x = lr. adam: lr, beta1, beta2, eps
    g: vec4<f32>,     // adam: bias corrections 1 - beta1^t, sqrt(1 - beta2^t)
}

@group(0) @binding(0) var<storage, read_write> param: array<f32>;
@group(0) @binding(1) var<storage, read_write> grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

// param -= lr * grad
@compute @workgroup_size(64)
fn sgd(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = (wg.y * nwg.x + wg.x) * 64u + li; i < p.n; i += nwg.x * nwg.y * 64u) {
        param[p.off.x + i] -= p.f.x * grad[p.off.y + i];
    }
}

// PyTorch's Adam (no weight decay, no amsgrad):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²
//   param -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
@compute @workgroup_size(64)
fn adam(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let lr = p.f.x;
    let b1 = p.f.y;
    let b2 = p.f.z;
    let eps = p.f.w;
    for (var i = (wg.y * nwg.x + wg.x) * 64u + li; i < p.n; i += nwg.x * nwg.y * 64u) {
        let gi = grad[p.off.y + i];
        let mi = b1 * m[p.off.z + i] + (1.0 - b1) * gi;
        let vi = b2 * v[p.off.w + i] + (1.0 - b2) * gi * gi;
        m[p.off.z + i] = mi;
        v[p.off.w + i] = vi;
        param[p.off.x + i] -= (lr / p.g.x) * mi / (sqrt(vi) / p.g.y + eps);
    }
}
