// Elementwise kernels over flat f32 arrays. Each walks its n elements with a grid-stride
// loop over a 2-D grid, so any n fits the workgroup-count limit.

struct Params {
    n: u32, p0: u32, p1: u32, p2: u32,
    off: vec4<u32>,   // first element of x0, x1 inside their bindings
    f: vec4<f32>,     // scalars: f.x = factor for `scale`
    g: vec4<f32>,
}

@group(0) @binding(0) var<storage, read_write> x0: array<f32>;
@group(0) @binding(1) var<storage, read_write> x1: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// x1 = max(x0, 0)
@compute @workgroup_size(64)
fn relu(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = (wg.y * nwg.x + wg.x) * 64u + li; i < p.n; i += nwg.x * nwg.y * 64u) {
        x1[p.off.y + i] = max(x0[p.off.x + i], 0.0);
    }
}

// x0 (the gradient) *= x1 (the activation) > 0
@compute @workgroup_size(64)
fn relu_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = (wg.y * nwg.x + wg.x) * 64u + li; i < p.n; i += nwg.x * nwg.y * 64u) {
        if (x1[p.off.y + i] <= 0.0) {
            x0[p.off.x + i] = 0.0;
        }
    }
}

// x0 *= f.x
@compute @workgroup_size(64)
fn scale(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = (wg.y * nwg.x + wg.x) * 64u + li; i < p.n; i += nwg.x * nwg.y * 64u) {
        x0[p.off.x + i] *= p.f.x;
    }
}

// x0 += x1
@compute @workgroup_size(64)
fn add(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var i = (wg.y * nwg.x + wg.x) * 64u + li; i < p.n; i += nwg.x * nwg.y * 64u) {
        x0[p.off.x + i] += x1[p.off.y + i];
    }
}
