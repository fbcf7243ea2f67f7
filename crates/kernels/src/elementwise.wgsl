// Elementwise kernels over flat arrays, computed in T. The bindings x0, x1 and their
// accessors (ld_x0, st_x0, ld4_x0, st4_x0, ...) and quads/quad come from the prelude
// generated for the operands' storage (shader.rs).
//
// Each invocation owns one quad (4 elements, whole u32 words even for packed float16) of
// the operand it writes, walked with a grid-stride loop over a 2-D grid (any n fits the
// workgroup-count limit). A whole quad with every operand aligned alike (p.aligned, from
// the host: always so for the engine's tensors) is one vec4 load per operand and one
// store; the partial quads at the ends, or misaligned operands, go element by element.

struct Params {
    n: u32,
    aligned: u32,     // 1: every operand's offset is ≡ the written one's (mod 4)
    p1: u32, p2: u32,
    off: vec4<u32>,   // first element of x0, x1 inside their bindings
    f: vec4<f32>,     // scalars: f.x = factor for `scale` and `unscale_check`; adam_denom's
                      // scale and eps (f.x + f.z, f.y + f.w)
    g: vec4<f32>,     // fill's value (g.x + g.y + g.z) * 2^g.w
}

@group(0) @binding(2) var<uniform> p: Params;

// x1 = max(x0, 0)
@compute @workgroup_size(64)
fn relu(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.y;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            st4_x1((o + r.x) >> 2u, max(ld4_x0((p.off.x + r.x) >> 2u), vec4<T>()));
        } else {
            var i = r.x;
            loop {
                st_x1(o + i, max(ld_x0(p.off.x + i), T(0.0)));
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// x0 (the gradient) *= x1 (the activation) > 0
@compute @workgroup_size(64)
fn relu_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.x;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            let q = (o + r.x) >> 2u;
            let off = ld4_x1((p.off.y + r.x) >> 2u) <= vec4<T>();
            st4_x0(q, select(ld4_x0(q), vec4<T>(), off));
        } else {
            var i = r.x;
            loop {
                if (ld_x1(p.off.y + i) <= T(0.0)) {
                    st_x0(o + i, T(0.0));
                }
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// x0 *= f.x
@compute @workgroup_size(64)
fn scale(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.x;
    let nq = quads(o, p.n);
    let f = T(p.f.x);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u) {
            let q = (o + r.x) >> 2u;
            st4_x0(q, ld4_x0(q) * f);
        } else {
            var i = r.x;
            loop {
                st_x0(o + i, ld_x0(o + i) * f);
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// x0 += x1
@compute @workgroup_size(64)
fn add(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.x;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            let q = (o + r.x) >> 2u;
            st4_x0(q, ld4_x0(q) + ld4_x1((p.off.y + r.x) >> 2u));
        } else {
            var i = r.x;
            loop {
                st_x0(o + i, ld_x0(o + i) + ld_x1(p.off.y + i));
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// x0 *= f.x; x1[0] = 1 if any result is infinite or NaN. Every invocation that finds one
// stores the same value, so the unordered stores agree (x1 is never packed float16).
@compute @workgroup_size(64)
fn unscale_check(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.x;
    let nq = quads(o, p.n);
    let f = T(p.f.x);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        var bad = false;
        if (r.y == 4u) {
            let q = (o + r.x) >> 2u;
            let v = ld4_x0(q) * f;
            st4_x0(q, v);
            bad = nonfinite_t(v.x) || nonfinite_t(v.y) || nonfinite_t(v.z) || nonfinite_t(v.w);
        } else {
            var i = r.x;
            loop {
                let v = ld_x0(o + i) * f;
                st_x0(o + i, v);
                bad = bad || nonfinite_t(v);
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
        if (bad) {
            st_x1(p.off.y, T(1.0));
        }
    }
}

// x1 = x0, converted to x1's type: PyTorch's _to_copy (autocast's casts) and clone.
@compute @workgroup_size(64)
fn copy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let o = p.off.y;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            st4_x1((o + r.x) >> 2u, ld4_x0((p.off.x + r.x) >> 2u));
        } else {
            var i = r.x;
            loop {
                st_x1(o + i, ld_x0(p.off.x + i));
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// x1 = sqrt(x0) * scale + eps: foreach Adam's denominator. scale = f.x + f.z and
// eps = f.y + f.w (each split in two f32s, for f64 kernels).
@compute @workgroup_size(64)
fn adam_denom(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let scale = T(p.f.x) + T(p.f.z);
    let eps = T(p.f.y) + T(p.f.w);
    let o = p.off.y;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u && p.aligned != 0u) {
            st4_x1((o + r.x) >> 2u, sqrt(ld4_x0((p.off.x + r.x) >> 2u)) * scale + eps);
        } else {
            var i = r.x;
            loop {
                st_x1(o + i, sqrt(ld_x0(p.off.x + i)) * scale + eps);
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}

// x0 = (g.x + g.y + g.z) * 2^g.w: the value, exact in f64 (split by the host).
@compute @workgroup_size(64)
fn fill(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let v = ldexp(T(p.g.x) + (T(p.g.y) + T(p.g.z)), i32(p.g.w));
    let o = p.off.x;
    let nq = quads(o, p.n);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < nq; u += nwg.x * nwg.y * 64u) {
        let r = quad(o, p.n, u);
        if (r.y == 4u) {
            st4_x0((o + r.x) >> 2u, vec4<T>(v));
        } else {
            var i = r.x;
            loop {
                st_x0(o + i, v);
                i++;
                if (i - r.x >= r.y) { break; }
            }
        }
    }
}
