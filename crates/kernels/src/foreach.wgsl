// PyTorch's foreach SGD step without momentum (`torch._foreach_add_(params, grads,
// alpha=-lr)`): param -= lr * grad for up to four tensors in one dispatch (foreach.rs).
// Pair t is bound as p<t>, g<t> (float32 quads from the generated prelude); a pair
// with n = 0 is a placeholder. Each pair is walked by every invocation in a grid-stride
// loop over its whole quads; invocation 0 does the last 1–3 values of a pair.

struct Params {
    n: vec4<u32>,       // values per pair
    off_p: vec4<u32>,   // first value of each param inside its binding (a multiple of 4)
    off_g: vec4<u32>,   // the same for each grad
    lr: vec4<f32>,      // lr.x
}

@group(0) @binding(8) var<uniform> p: Params;

@compute @workgroup_size(64)
fn sgd_foreach(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) li: u32) {
    let first = (wg.y * nwg.x + wg.x) * 64u + li;
    let stride = nwg.x * nwg.y * 64u;
    let lr = p.lr.x;
    let q = p.n >> vec4<u32>(2u);
    let op = p.off_p >> vec4<u32>(2u);
    let og = p.off_g >> vec4<u32>(2u);
    for (var u = first; u < q.x; u += stride) { p0[op.x + u] = p0[op.x + u] - lr * g0[og.x + u]; }
    for (var u = first; u < q.y; u += stride) { p1[op.y + u] = p1[op.y + u] - lr * g1[og.y + u]; }
    for (var u = first; u < q.z; u += stride) { p2[op.z + u] = p2[op.z + u] - lr * g2[og.z + u]; }
    for (var u = first; u < q.w; u += stride) { p3[op.w + u] = p3[op.w + u] - lr * g3[og.w + u]; }
    if (first == 0u) {
        for (var i = 4u * q.x; i < p.n.x; i++) { st_p0(p.off_p.x + i, ld_p0(p.off_p.x + i) - lr * ld_g0(p.off_g.x + i)); }
        for (var i = 4u * q.y; i < p.n.y; i++) { st_p1(p.off_p.y + i, ld_p1(p.off_p.y + i) - lr * ld_g1(p.off_g.y + i)); }
        for (var i = 4u * q.z; i < p.n.z; i++) { st_p2(p.off_p.z + i, ld_p2(p.off_p.z + i) - lr * ld_g2(p.off_g.z + i)); }
        for (var i = 4u * q.w; i < p.n.w; i++) { st_p3(p.off_p.w + i, ld_p3(p.off_p.w + i) - lr * ld_g3(p.off_g.w + i)); }
    }
}
