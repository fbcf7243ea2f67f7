// Products fused with the operation that reads their output next (matmul/fused.rs). Both
// outputs are written, as the two separate operations write them; the pass over C that the
// second operation would make is saved. float32 operands bound as quads (vec4 arrays from
// the generated prelude: a, b, c, x, r at bindings 0–4); every offset is a multiple of 4
// elements and n a multiple of 4.
//
// * mm_smallk_relu: C = A·B (+ bias in x), R = max(C, 0); A is m×k (k ≤ 4), B is k×n,
//   both untransposed. One quad of columns per invocation, SMALLK_ROWS rows at a time.
// * mm_smallm_colsum: C = Aᵀ·B and x = the column sums of B; A is k×m (m ≤ 4), B is k×n.
//   One quad of columns per invocation over every row of B (the weight's and the bias's
//   gradients from one pass over dZ).
//
// The sums run in the order the unfused kernels use (the products along k, then the bias;
// the column sums row by row), one value per invocation, so results are deterministic.

struct Params {
    m: u32, n: u32, k: u32, flags: u32,    // flags: 2 = add the bias (x)
    a_off: u32, b_off: u32, c_off: u32, x_off: u32,
    r_off: u32, p0: u32, p1: u32, p2: u32,
}

@group(0) @binding(5) var<uniform> p: Params;

const SMALLK_ROWS: u32 = 64u;

// Element t of A, read through `cache` (the quad last loaded, tag `at`): A's elements are
// walked in order, so each quad is loaded once (uniform across the workgroup).
struct AQuad {
    at: u32,
    v: vec4<f32>,
}

fn a_elem(t: u32, cache: ptr<function, AQuad>) -> f32 {
    let w = t >> 2u;
    if ((*cache).at != w) {
        (*cache).at = w;
        (*cache).v = a[w];
    }
    return (*cache).v[t & 3u];
}

@compute @workgroup_size(64)
fn mm_smallk_relu(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) li: u32) {
    let quads = p.n >> 2u;
    let blocks = (p.m + SMALLK_ROWS - 1u) / SMALLK_ROWS;
    for (var rb = wg.y; rb < blocks; rb += nwg.y) {
        for (var q = wg.x * 64u + li; q < quads; q += nwg.x * 64u) {
            smallk_relu(rb * SMALLK_ROWS, min(rb * SMALLK_ROWS + SMALLK_ROWS, p.m), q);
        }
    }
}

fn smallk_relu(row0: u32, row1: u32, q: u32) {
    let quads = p.n >> 2u;
    // B's k rows at this quad of columns, and the bias's quad.
    let bq = (p.b_off >> 2u) + q;
    let b0 = b[bq];
    var b1 = vec4<f32>();
    var b2 = vec4<f32>();
    var b3 = vec4<f32>();
    if (p.k > 1u) { b1 = b[bq + quads]; }
    if (p.k > 2u) { b2 = b[bq + 2u * quads]; }
    if (p.k > 3u) { b3 = b[bq + 3u * quads]; }
    var bias = vec4<f32>();
    if ((p.flags & 2u) != 0u) { bias = x[(p.x_off >> 2u) + q]; }
    var cache = AQuad(0xffffffffu, vec4<f32>());
    var t = p.a_off + row0 * p.k;
    var cq = (p.c_off >> 2u) + row0 * quads + q;
    var rq = (p.r_off >> 2u) + row0 * quads + q;
    for (var i = row0; i < row1; i++) {
        var v = vec4<f32>(a_elem(t, &cache)) * b0;
        if (p.k > 1u) { v = fma(vec4<f32>(a_elem(t + 1u, &cache)), b1, v); }
        if (p.k > 2u) { v = fma(vec4<f32>(a_elem(t + 2u, &cache)), b2, v); }
        if (p.k > 3u) { v = fma(vec4<f32>(a_elem(t + 3u, &cache)), b3, v); }
        v += bias;
        c[cq] = v;
        r[rq] = max(v, vec4<f32>());
        t += p.k;
        cq += quads;
        rq += quads;
    }
}

@compute @workgroup_size(64)
fn mm_smallm_colsum(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) li: u32) {
    let quads = p.n >> 2u;
    for (var q = (wg.y * nwg.x + wg.x) * 64u + li; q < quads; q += nwg.x * nwg.y * 64u) {
        smallm_colsum(q);
    }
}

fn smallm_colsum(q: u32) {
    let quads = p.n >> 2u;
    var c0 = vec4<f32>();
    var c1 = vec4<f32>();
    var c2 = vec4<f32>();
    var c3 = vec4<f32>();
    var s = vec4<f32>();
    var cache = AQuad(0xffffffffu, vec4<f32>());
    var t = p.a_off;
    var bq = (p.b_off >> 2u) + q;
    for (var kk = 0u; kk < p.k; kk++) {
        let g = b[bq];
        c0 = fma(vec4<f32>(a_elem(t, &cache)), g, c0);
        if (p.m > 1u) { c1 = fma(vec4<f32>(a_elem(t + 1u, &cache)), g, c1); }
        if (p.m > 2u) { c2 = fma(vec4<f32>(a_elem(t + 2u, &cache)), g, c2); }
        if (p.m > 3u) { c3 = fma(vec4<f32>(a_elem(t + 3u, &cache)), g, c3); }
        s += g;
        t += p.m;
        bq += quads;
    }
    let cq = (p.c_off >> 2u) + q;
    c[cq] = c0;
    if (p.m > 1u) { c[cq + quads] = c1; }
    if (p.m > 2u) { c[cq + 2u * quads] = c2; }
    if (p.m > 3u) { c[cq + 3u * quads] = c3; }
    x[(p.x_off >> 2u) + q] = s;
}
