// Flat kernels of three operands, computed in T: x2 = f(x0, x1), x2 walked quad by quad
// as elementwise.wgsl walks its written operand (vec4s where every operand is aligned
// alike, element by element at the ends). Bindings x0, x1, x2 and their accessors come
// from the generated prelude; x2 never shares memory with x0 or x1 (the host refuses it).

struct Params {
    n: u32,
    aligned: u32,     // 1: every operand's offset is ≡ x2's (mod 4)
    p1: u32, p2: u32,
    off: vec4<u32>,   // first element of x0, x1, x2 inside their bindings
    f: vec4<f32>,     // unused
    g: vec4<f32>,     // unused
}

@group(0) @binding(3) var<uniform> p: Params;

// x2 = x0 (the gradient) where x1 (the ReLU's output) > 0, else 0: threshold_backward,
// as the cpu backing computes it (a NaN output gives 0).
@compute @workgroup_size(64)
fn threshold_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.z;
    let nq = quads(o, p.n);
    let first = (wg.y * nwg.x + wg.x) * 64u + li;
    let stride = nwg.x * nwg.y * 64u;
    if (p.aligned != 0u && (o & 3u) == 0u && (p.n & 3u) == 0u) {
        // Whole quads only: no per-quad bounds (software adapters pay for each index op).
        let q0 = p.off.x >> 2u;
        let q1 = p.off.y >> 2u;
        let q2 = o >> 2u;
        for (var u = first; u < nq; u += stride) {
            let on = ld4_x1(q1 + u) > vec4<T>();
            st4_x2(q2 + u, select(vec4<T>(), ld4_x0(q0 + u), on));
        }
        return;
    }
    for (var u = first; u < nq; u += stride) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            let on = ld4_x1((p.off.y + r.x) >> 2u) > vec4<T>();
            st4_x2((o + r.x) >> 2u, select(vec4<T>(), ld4_x0((p.off.x + r.x) >> 2u), on));
        } else {
            var i = r.x;
            loop {
                st_x2(o + i, select(T(0.0), ld_x0(p.off.x + i), ld_x1(p.off.y + i) > T(0.0)));
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}
