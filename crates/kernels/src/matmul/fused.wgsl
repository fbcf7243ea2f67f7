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
// * mm_smalln4_colsum: the same with the roles turned: A is k×m (m a multiple of 4), B is
//   k×n (n ≤ 4; the output layer's dZ). Four rows of C per invocation over every row of B,
//   each invocation summing B's rows as it goes (B is read anyway); the first writes x.
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

// Element t of A (the same for every invocation: a uniform load).
fn a_elem(t: u32) -> f32 {
    return a[t >> 2u][t & 3u];
}

// One row of C and R from A's k values at t.
fn smallk_row(t: u32, b0: vec4<f32>, b1: vec4<f32>, b2: vec4<f32>, b3: vec4<f32>,
              bias: vec4<f32>, cq: u32, rq: u32) {
    var v = vec4<f32>(a_elem(t)) * b0;
    if (p.k > 1u) { v = fma(vec4<f32>(a_elem(t + 1u)), b1, v); }
    if (p.k > 2u) { v = fma(vec4<f32>(a_elem(t + 2u)), b2, v); }
    if (p.k > 3u) { v = fma(vec4<f32>(a_elem(t + 3u)), b3, v); }
    v += bias;
    c[cq] = v;
    r[rq] = max(v, vec4<f32>());
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
    var t = p.a_off + row0 * p.k;
    var cq = (p.c_off >> 2u) + row0 * quads + q;
    var rq = (p.r_off >> 2u) + row0 * quads + q;
    var i = row0;
    // k = 2 (the lesson's two inputs): two rows of A are one quad, one load for both
    // (row0 is a multiple of SMALLK_ROWS and a_off of 4, so t stays on quads).
    if (p.k == 2u) {
        for (; i + 1u < row1; i += 2u) {
            let av = a[t >> 2u];
            let v0 = fma(vec4<f32>(av.y), b1, vec4<f32>(av.x) * b0) + bias;
            let v1 = fma(vec4<f32>(av.w), b1, vec4<f32>(av.z) * b0) + bias;
            c[cq] = v0;
            r[rq] = max(v0, vec4<f32>());
            c[cq + quads] = v1;
            r[rq + quads] = max(v1, vec4<f32>());
            t += 4u;
            cq += 2u * quads;
            rq += 2u * quads;
        }
    }
    for (; i < row1; i++) {
        smallk_row(t, b0, b1, b2, b3, bias, cq, rq);
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
    var t = p.a_off;
    var bq = (p.b_off >> 2u) + q;
    var kk = 0u;
    // m = 2 (the lesson's two inputs): two rows of A are one quad, one load for both.
    if (p.m == 2u) {
        for (; kk + 1u < p.k; kk += 2u) {
            let av = a[t >> 2u];
            let g0 = b[bq];
            let g1 = b[bq + quads];
            c0 = fma(vec4<f32>(av.x), g0, c0);
            c1 = fma(vec4<f32>(av.y), g0, c1);
            s += g0;
            c0 = fma(vec4<f32>(av.z), g1, c0);
            c1 = fma(vec4<f32>(av.w), g1, c1);
            s += g1;
            t += 4u;
            bq += 2u * quads;
        }
    }
    for (; kk < p.k; kk++) {
        let g = b[bq];
        c0 = fma(vec4<f32>(a_elem(t)), g, c0);
        if (p.m > 1u) { c1 = fma(vec4<f32>(a_elem(t + 1u)), g, c1); }
        if (p.m > 2u) { c2 = fma(vec4<f32>(a_elem(t + 2u)), g, c2); }
        if (p.m > 3u) { c3 = fma(vec4<f32>(a_elem(t + 3u)), g, c3); }
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

@compute @workgroup_size(64)
fn mm_smalln4_colsum(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) li: u32) {
    for (var q = (wg.y * nwg.x + wg.x) * 64u + li; q < (p.m >> 2u); q += nwg.x * nwg.y * 64u) {
        smalln4_colsum(q);
    }
}

// Row kk of B (its n ≤ 4 values from element t; zeros after).
fn b_row(t: u32) -> vec4<f32> {
    var v = vec4<f32>(ld_b(t), 0.0, 0.0, 0.0);
    if (p.n > 1u) { v.y = ld_b(t + 1u); }
    if (p.n > 2u) { v.z = ld_b(t + 2u); }
    if (p.n > 3u) { v.w = ld_b(t + 3u); }
    return v;
}

// Rows 4q..4q+3 of C (columns 4q..4q+3 of A, one quad a row of A), the products along k in
// mm_smalln4's order; s sums B's rows in colsum_rows' order.
fn smalln4_colsum(q: u32) {
    let mq = p.m >> 2u;
    var c0 = vec4<f32>();
    var c1 = vec4<f32>();
    var c2 = vec4<f32>();
    var c3 = vec4<f32>();
    var s = vec4<f32>();
    var at = (p.a_off >> 2u) + q;
    var t = p.b_off;
    var kk = 0u;
    // n = 2 (the lesson's two classes): two rows of B are one quad, one load for both.
    if (p.n == 2u) {
        for (; kk + 1u < p.k; kk += 2u) {
            let bq = b[t >> 2u];
            let g0 = vec4<f32>(bq.xy, 0.0, 0.0);
            let a0 = a[at];
            c0 = fma(vec4<f32>(a0.x), g0, c0);
            c1 = fma(vec4<f32>(a0.y), g0, c1);
            c2 = fma(vec4<f32>(a0.z), g0, c2);
            c3 = fma(vec4<f32>(a0.w), g0, c3);
            s += g0;
            let g1 = vec4<f32>(bq.zw, 0.0, 0.0);
            let a1 = a[at + mq];
            c0 = fma(vec4<f32>(a1.x), g1, c0);
            c1 = fma(vec4<f32>(a1.y), g1, c1);
            c2 = fma(vec4<f32>(a1.z), g1, c2);
            c3 = fma(vec4<f32>(a1.w), g1, c3);
            s += g1;
            at += 2u * mq;
            t += 4u;
        }
    }
    for (; kk < p.k; kk++) {
        let g = b_row(t);
        let av = a[at];
        c0 = fma(vec4<f32>(av.x), g, c0);
        c1 = fma(vec4<f32>(av.y), g, c1);
        c2 = fma(vec4<f32>(av.z), g, c2);
        c3 = fma(vec4<f32>(av.w), g, c3);
        s += g;
        at += mq;
        t += p.n;
    }
    // The four rows are 4n values from a quad: n whole quads of C.
    let cq = (p.c_off >> 2u) + q * p.n;
    if (p.n == 2u) {
        c[cq] = vec4<f32>(c0.xy, c1.xy);
        c[cq + 1u] = vec4<f32>(c2.xy, c3.xy);
    } else {
        let e = p.c_off + 4u * q * p.n;
        for (var j = 0u; j < p.n; j++) {
            st_c(e + j, c0[j]);
            st_c(e + p.n + j, c1[j]);
            st_c(e + 2u * p.n + j, c2[j]);
            st_c(e + 3u * p.n + j, c3[j]);
        }
    }
    if (q == 0u) {
        for (var j = 0u; j < p.n; j++) {
            st_x(p.x_off + j, s[j]);
        }
    }
}

// x[j] = Σ_k B[k, j] alone, in one pass, for a B of few rows (COLSUM_ROWS in fused.rs): one
// column per invocation, rows in order. The bias's gradient beside a product that is not
// fused (the output layer's, whose dZ has two columns).
@compute @workgroup_size(64)
fn colsum_rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) li: u32) {
    for (var j = (wg.y * nwg.x + wg.x) * 64u + li; j < p.n; j += nwg.x * nwg.y * 64u) {
        var s = 0.0;
        var t = p.b_off + j;
        for (var kk = 0u; kk < p.k; kk++) {
            s += ld_b(t);
            t += p.n;
        }
        st_x(p.x_off + j, s);
    }
}
