// Naive matmul: one output per invocation, any strides (so any transposes and any
// alignment), computed in T. The baseline in the bench, and the fallback for pieces no
// faster kernel takes (odd sizes, unaligned offsets, k tails, gathered rows). Bindings a,
// b, c, bias and their accessors come from the generated prelude (shader.rs).

struct Params {
    m: u32, n: u32, k: u32, flags: u32,      // flags: 1 = accumulate into C, 2 = add bias
    a_off: u32, a_rs: u32, a_cs: u32,        // op(A)[i, k] = a[a_off + i * a_rs + k * a_cs]
    b_off: u32, b_rs: u32, b_cs: u32,        // op(B)[k, j] = b[b_off + k * b_rs + j * b_cs]
    c_off: u32, c_stride: u32,
    bias_off: u32, p0: u32, p1: u32, p2: u32,
}

@group(0) @binding(4) var<uniform> p: Params;

// C[i, j] (+)= op(A)[i, :] · op(B)[:, j] (+ bias[j])
fn put(i: u32, j: u32) {
    var s = T(0.0);
    for (var k = 0u; k < p.k; k++) {
        s = fma(ld_a(p.a_off + i * p.a_rs + k * p.a_cs), ld_b(p.b_off + k * p.b_rs + j * p.b_cs), s);
    }
    if ((p.flags & 2u) != 0u) {
        s += ld_bias(p.bias_off + j);
    }
    let at = p.c_off + i * p.c_stride + j;
    if ((p.flags & 1u) != 0u) {
        s += ld_c(at);
    }
    st_c(at, s);
}

@compute @workgroup_size(8, 8)
fn mm_naive(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_id) lid: vec3<u32>) {
    let tiles_m = (p.m + 7u) / 8u;
    let tiles_n = (p.n + 7u) / 8u;
    for (var ty = wg.y; ty < tiles_m; ty += nwg.y) {
        for (var tx = wg.x; tx < tiles_n; tx += nwg.x) {
            let i = ty * 8u + lid.y;
            let j = tx * 8u + lid.x;
            if (i < p.m && j < p.n) {
                put(i, j);
            }
        }
    }
}

// For packed float16 C: one u32 word of C per invocation (the one or two elements in it
// that belong to this piece), so neighbours never write one word. Walks the span from
// C's first to its last element and skips the columns past n.
@compute @workgroup_size(64)
fn mm_naive_words(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) li: u32) {
    let span = (p.m - 1u) * p.c_stride + p.n;
    let units = units_c(p.c_off, span);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_c(p.c_off, span, u);
        for (var r = e.x; r < e.x + e.y; r++) {
            let j = r % p.c_stride;
            if (j < p.n) {
                put(r / p.c_stride, j);
            }
        }
    }
}
