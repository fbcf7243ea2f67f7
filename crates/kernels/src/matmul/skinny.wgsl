// Matmuls with one dimension of at most 4, computed in T: the lesson's 2 → 2000 → 2 network
// is made of them (k = 2: the first layer and dA of the output layer; n = 2: the logits and
// dW of the output layer; m = 2: dW of the first layer). Bindings a, b, c, bias and their
// accessors come from the generated prelude (shader.rs); any strides, so any transposes.
//
// * mm_smallk (k ≤ 4): a fused elementwise pass over C. Each invocation holds op(B)'s k
//   rows at 4 columns and bias in registers and walks SK_ROWS rows; op(A) values are the
//   same for the whole workgroup (uniform loads).
// * mm_smalln (n ≤ 4): output-stationary, one row of C per invocation, streaming its row
//   of op(A) along k (4 values a step); op(B)[k, 0..n] is uniform.
// * mm_smallm (m ≤ 4): 4 columns of C per invocation, all m rows, streaming op(B) along k;
//   op(A)[0..m, k] is uniform.
// mm_smalln and mm_smallm split a long k into `splits` chunks of `kc`: split s writes its
// partial sums to a scratch buffer bound as c ([split][m][n], no bias, no accumulate) and
// mm_sum adds them in order into C (deterministic), so a GPU has work for every core
// even when C is tiny.
//
// Packed float16 C: an invocation owns whole u32 words only if every row of C starts on a
// word (c_off and c_stride even); the host sends other layouts to the naive kernel.
//
// Flag 4 (VEC) says the operand a kernel streams is quad-aligned (offset and stride
// multiples of 4 elements), so its inner loop loads or stores vec4s (ld4_*/st4_*): about
// 3× cheaper per value on llvmpipe, and wider accesses on GPUs. The kernels stay correct
// without it, element by element.

struct Params {
    m: u32, n: u32, k: u32, flags: u32,      // flags: 1 = accumulate into C, 2 = add bias
    a_off: u32, a_rs: u32, a_cs: u32,        // op(A)[i, k] = a[a_off + i * a_rs + k * a_cs]
    b_off: u32, b_rs: u32, b_cs: u32,        // op(B)[k, j] = b[b_off + k * b_rs + j * b_cs]
    c_off: u32, c_stride: u32,
    bias_off: u32,
    splits: u32,        // chunks of k (1: no split)
    kc: u32,            // k values per chunk
    split_stride: u32,  // elements between two splits' partial sums (m * n; 0: no split)
}

@group(0) @binding(4) var<uniform> p: Params;

const SK_ROWS: u32 = 64u;

fn opa(i: u32, k: u32) -> T {
    return ld_a(p.a_off + i * p.a_rs + k * p.a_cs);
}

fn opb(k: u32, j: u32) -> T {
    return ld_b(p.b_off + k * p.b_rs + j * p.b_cs);
}

// C[i, j] = v (+ bias[j]) (+ C[i, j]); `base` is where C (or a split's partials) starts.
fn put(base: u32, i: u32, j: u32, v: T) {
    var s = v;
    if ((p.flags & 2u) != 0u) {
        s += ld_bias(p.bias_off + j);
    }
    let at = base + i * p.c_stride + j;
    if ((p.flags & 1u) != 0u) {
        s += ld_c(at);
    }
    st_c(at, s);
}

// C[i, j0 .. j0 + cnt] from v.
fn put4(base: u32, i: u32, j0: u32, cnt: u32, v: vec4<T>) {
    put(base, i, j0, v.x);
    if (cnt > 1u) {
        put(base, i, j0 + 1u, v.y);
    }
    if (cnt > 2u) {
        put(base, i, j0 + 2u, v.z);
    }
    if (cnt > 3u) {
        put(base, i, j0 + 3u, v.w);
    }
}

// ---- k ≤ 4 ----

// op(B)[kk, j0 .. j0 + 4], zero when kk ≥ k; columns past n are clamped (never stored).
fn brow(kk: u32, j0: u32) -> vec4<T> {
    if (kk >= p.k) {
        return vec4<T>();
    }
    let last = p.n - 1u;
    return vec4<T>(opb(kk, j0), opb(kk, min(j0 + 1u, last)), opb(kk, min(j0 + 2u, last)), opb(kk, min(j0 + 3u, last)));
}

// op(A)[i, kk], zero when kk ≥ k.
fn acol(i: u32, kk: u32) -> T {
    if (kk >= p.k) {
        return T(0.0);
    }
    return opa(i, kk);
}

// bias[j0 .. j0 + 4] (clamped past n), or zeros without a bias.
fn bias4(j0: u32) -> vec4<T> {
    if ((p.flags & 2u) == 0u) {
        return vec4<T>();
    }
    let last = p.bias_off + p.n - 1u;
    let at = p.bias_off + j0;
    return vec4<T>(ld_bias(at), ld_bias(min(at + 1u, last)), ld_bias(min(at + 2u, last)), ld_bias(min(at + 3u, last)));
}

fn smallk(row0: u32, j0: u32) {
    let b0 = brow(0u, j0);
    let b1 = brow(1u, j0);
    let b2 = brow(2u, j0);
    let b3 = brow(3u, j0);
    let cnt = min(4u, p.n - j0);
    let row1 = min(row0 + SK_ROWS, p.m);
    // VEC: rows of C start on quads, so 4 columns from j0 are one quad.
    if ((p.flags & 4u) != 0u && cnt == 4u) {
        smallk_quads(row0, row1, j0, b0, b1, b2, b3, bias4(j0));
        return;
    }
    for (var i = row0; i < row1; i++) {
        var v = vec4<T>(acol(i, 0u)) * b0;
        v = fma(vec4<T>(acol(i, 1u)), b1, v);
        v = fma(vec4<T>(acol(i, 2u)), b2, v);
        v = fma(vec4<T>(acol(i, 3u)), b3, v);
        put4(p.c_off, i, j0, cnt, v);
    }
}

// Rows row0 .. row1 of one quad of C: addresses stepped, not recomputed, and only k terms
// (uniform branches), which halves llvmpipe's time per row against the general loop.
fn smallk_quads(row0: u32, row1: u32, j0: u32, b0: vec4<T>, b1: vec4<T>, b2: vec4<T>, b3: vec4<T>,
                bias: vec4<T>) {
    let qs = p.c_stride >> 2u;
    var q = (p.c_off + row0 * p.c_stride + j0) >> 2u;
    var at = p.a_off + row0 * p.a_rs;
    let acc = (p.flags & 1u) != 0u;
    var i = row0;
    // k = 2 with A's rows dense from a quad (dA = dZ·Wᵀ of the lesson's output layer): two
    // rows of A are one quad, one load for both; per-lane loads are what llvmpipe pays for.
    if (p.k == 2u && p.a_cs == 1u && p.a_rs == 2u && (at & 3u) == 0u) {
        for (; i + 1u < row1; i += 2u) {
            let av = ld4_a(at >> 2u);
            var v0 = fma(vec4<T>(av.y), b1, vec4<T>(av.x) * b0) + bias;
            var v1 = fma(vec4<T>(av.w), b1, vec4<T>(av.z) * b0) + bias;
            if (acc) {
                v0 += ld4_c(q);
                v1 += ld4_c(q + qs);
            }
            st4_c(q, v0);
            st4_c(q + qs, v1);
            q += 2u * qs;
            at += 4u;
        }
    }
    for (; i < row1; i++) {
        // The bias after the products, as the general loop and the cpu backing add it.
        var v = vec4<T>(ld_a(at)) * b0;
        if (p.k > 1u) {
            v = fma(vec4<T>(ld_a(at + p.a_cs)), b1, v);
        }
        if (p.k > 2u) {
            v = fma(vec4<T>(ld_a(at + 2u * p.a_cs)), b2, v);
        }
        if (p.k > 3u) {
            v = fma(vec4<T>(ld_a(at + 3u * p.a_cs)), b3, v);
        }
        v += bias;
        if (acc) {
            v += ld4_c(q);
        }
        st4_c(q, v);
        q += qs;
        at += p.a_rs;
    }
}

@compute @workgroup_size(64)
fn mm_smallk(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) li: u32) {
    let quads = (p.n + 3u) / 4u;
    let qblocks = (quads + 63u) / 64u;
    let rblocks = (p.m + SK_ROWS - 1u) / SK_ROWS;
    for (var rb = wg.y; rb < rblocks; rb += nwg.y) {
        for (var qb = wg.x; qb < qblocks; qb += nwg.x) {
            let q = qb * 64u + li;
            if (q < quads) {
                smallk(rb * SK_ROWS, q * 4u);
            }
        }
    }
}

// ---- n ≤ 4 ----

// op(B)[kk, 0 .. n] from its element `at` = op(B)[kk, 0]; columns past n are zero (never
// stored). Only the n loads (uniform branches): the loads, not the FMAs, cost on llvmpipe.
fn bn(at: u32) -> vec4<T> {
    var b = vec4<T>(ld_b(at), T(0.0), T(0.0), T(0.0));
    if (p.n > 1u) {
        b.y = ld_b(at + p.b_cs);
    }
    if (p.n > 2u) {
        b.z = ld_b(at + 2u * p.b_cs);
    }
    if (p.n > 3u) {
        b.w = ld_b(at + 3u * p.b_cs);
    }
    return b;
}

// op(B) is two dense columns (n = 2, rows of 2 elements) starting on a quad: two rows of B
// are one quad. k0 of every split is a multiple of 4, so the rows a loop starts at stay on
// quads.
fn two_dense_b() -> bool {
    return p.n == 2u && p.b_cs == 1u && p.b_rs == 2u && (p.b_off & 3u) == 0u;
}

fn smalln(i: u32, s: u32) {
    let k0 = s * p.kc;
    let k1 = min(k0 + p.kc, p.k);
    var acc = vec4<T>();
    var kk = k0;
    // Addresses are stepped along k, not recomputed per load.
    var bt = p.b_off + k0 * p.b_rs;
    if ((p.flags & 4u) != 0u && two_dense_b()) {
        // VEC, and B two dense columns from a quad (the logits' W): four rows of B are two
        // quads, so 2 loads where bn() makes 8; the same products in the same order.
        var at = (p.a_off + i * p.a_rs + k0) >> 2u;
        for (; kk + 4u <= k1; kk += 4u) {
            let a = ld4_a(at);
            let b01 = ld4_b(bt >> 2u);
            let b23 = ld4_b((bt >> 2u) + 1u);
            acc = fma(vec4<T>(a.x), vec4<T>(b01.xy, T(0.0), T(0.0)), acc);
            acc = fma(vec4<T>(a.y), vec4<T>(b01.zw, T(0.0), T(0.0)), acc);
            acc = fma(vec4<T>(a.z), vec4<T>(b23.xy, T(0.0), T(0.0)), acc);
            acc = fma(vec4<T>(a.w), vec4<T>(b23.zw, T(0.0), T(0.0)), acc);
            at += 1u;
            bt += 8u;
        }
    }
    if ((p.flags & 4u) != 0u) {
        // VEC: op(A)'s rows run along k (a_cs = 1) from a quad; k0 is a multiple of 4.
        var at = (p.a_off + i * p.a_rs + kk) >> 2u;
        for (; kk + 4u <= k1; kk += 4u) {
            let a = ld4_a(at);
            acc = fma(vec4<T>(a.x), bn(bt), acc);
            acc = fma(vec4<T>(a.y), bn(bt + p.b_rs), acc);
            acc = fma(vec4<T>(a.z), bn(bt + 2u * p.b_rs), acc);
            acc = fma(vec4<T>(a.w), bn(bt + 3u * p.b_rs), acc);
            at += 1u;
            bt += 4u * p.b_rs;
        }
    }
    for (; kk < k1; kk++) {
        acc = fma(vec4<T>(opa(i, kk)), bn(bt), acc);
        bt += p.b_rs;
    }
    put4(p.c_off + s * p.split_stride, i, 0u, p.n, acc);
}

// Four rows of C per invocation, for a transposed A whose columns (C's rows) are
// quad-aligned: one vec4 of op(A)[i0 .. i0 + 4, kk] per step of k.
fn smalln4(i0: u32, s: u32) {
    let k0 = s * p.kc;
    let k1 = min(k0 + p.kc, p.k);
    var c0 = vec4<T>();
    var c1 = vec4<T>();
    var c2 = vec4<T>();
    var c3 = vec4<T>();
    // a_cs is a multiple of 4 here: a quad's step along k.
    var at = (p.a_off + i0 + k0 * p.a_cs) >> 2u;
    var bt = p.b_off + k0 * p.b_rs;
    var kk = k0;
    if (two_dense_b()) {
        // B two dense columns from a quad (dZ of the output layer): two rows of B in one
        // load where bn() makes two each; the same products in the same order.
        for (; kk + 2u <= k1; kk += 2u) {
            let bq = ld4_b(bt >> 2u);
            let a = ld4_a(at);
            let b = vec4<T>(bq.xy, T(0.0), T(0.0));
            c0 = fma(vec4<T>(a.x), b, c0);
            c1 = fma(vec4<T>(a.y), b, c1);
            c2 = fma(vec4<T>(a.z), b, c2);
            c3 = fma(vec4<T>(a.w), b, c3);
            at += p.a_cs >> 2u;
            let a2 = ld4_a(at);
            let b2 = vec4<T>(bq.zw, T(0.0), T(0.0));
            c0 = fma(vec4<T>(a2.x), b2, c0);
            c1 = fma(vec4<T>(a2.y), b2, c1);
            c2 = fma(vec4<T>(a2.z), b2, c2);
            c3 = fma(vec4<T>(a2.w), b2, c3);
            at += p.a_cs >> 2u;
            bt += 4u;
        }
    }
    for (; kk < k1; kk++) {
        let a = ld4_a(at);
        let b = bn(bt);
        c0 = fma(vec4<T>(a.x), b, c0);
        c1 = fma(vec4<T>(a.y), b, c1);
        c2 = fma(vec4<T>(a.z), b, c2);
        c3 = fma(vec4<T>(a.w), b, c3);
        at += p.a_cs >> 2u;
        bt += p.b_rs;
    }
    let base = p.c_off + s * p.split_stride;
    put4(base, i0, 0u, p.n, c0);
    if (i0 + 1u < p.m) {
        put4(base, i0 + 1u, 0u, p.n, c1);
    }
    if (i0 + 2u < p.m) {
        put4(base, i0 + 2u, 0u, p.n, c2);
    }
    if (i0 + 3u < p.m) {
        put4(base, i0 + 3u, 0u, p.n, c3);
    }
}

@compute @workgroup_size(64)
fn mm_smalln4(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) li: u32) {
    let quads = (p.m + 3u) / 4u;
    let qblocks = (quads + 63u) / 64u;
    for (var s = wg.y; s < p.splits; s += nwg.y) {
        for (var qb = wg.x; qb < qblocks; qb += nwg.x) {
            let q = qb * 64u + li;
            if (q < quads) {
                smalln4(q * 4u, s);
            }
        }
    }
}

@compute @workgroup_size(64)
fn mm_smalln(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) li: u32) {
    let rblocks = (p.m + 63u) / 64u;
    for (var s = wg.y; s < p.splits; s += nwg.y) {
        for (var rb = wg.x; rb < rblocks; rb += nwg.x) {
            let i = rb * 64u + li;
            if (i < p.m) {
                smalln(i, s);
            }
        }
    }
}

// ---- m ≤ 4 ----

fn smallm(j0: u32, s: u32) {
    let k0 = s * p.kc;
    let k1 = min(k0 + p.kc, p.k);
    let lastc = p.n - 1u;
    let j1 = min(j0 + 1u, lastc);
    let j2 = min(j0 + 2u, lastc);
    let j3 = min(j0 + 3u, lastc);
    var c0 = vec4<T>();
    var c1 = vec4<T>();
    var c2 = vec4<T>();
    var c3 = vec4<T>();
    // VEC: op(B)'s rows run along n (b_cs = 1) and start on quads; 4 columns from j0
    // are one quad when all are inside n. Addresses are stepped along k, and only the m
    // rows of op(A) are loaded (uniform branches).
    let whole = (p.flags & 4u) != 0u && j0 + 4u <= p.n;
    var bt = p.b_off + k0 * p.b_rs;
    var at = p.a_off + k0 * p.a_cs;
    for (var kk = k0; kk < k1; kk++) {
        var bv: vec4<T>;
        if (whole) {
            bv = ld4_b((bt + j0) >> 2u);
        } else {
            bv = vec4<T>(opb(kk, j0), opb(kk, j1), opb(kk, j2), opb(kk, j3));
        }
        c0 = fma(vec4<T>(ld_a(at)), bv, c0);
        if (p.m > 1u) {
            c1 = fma(vec4<T>(ld_a(at + p.a_rs)), bv, c1);
        }
        if (p.m > 2u) {
            c2 = fma(vec4<T>(ld_a(at + 2u * p.a_rs)), bv, c2);
        }
        if (p.m > 3u) {
            c3 = fma(vec4<T>(ld_a(at + 3u * p.a_rs)), bv, c3);
        }
        bt += p.b_rs;
        at += p.a_cs;
    }
    let base = p.c_off + s * p.split_stride;
    let cnt = min(4u, p.n - j0);
    put4(base, 0u, j0, cnt, c0);
    if (p.m > 1u) {
        put4(base, 1u, j0, cnt, c1);
    }
    if (p.m > 2u) {
        put4(base, 2u, j0, cnt, c2);
    }
    if (p.m > 3u) {
        put4(base, 3u, j0, cnt, c3);
    }
}

@compute @workgroup_size(64)
fn mm_smallm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) li: u32) {
    let quads = (p.n + 3u) / 4u;
    let qblocks = (quads + 63u) / 64u;
    for (var s = wg.y; s < p.splits; s += nwg.y) {
        for (var qb = wg.x; qb < qblocks; qb += nwg.x) {
            let q = qb * 64u + li;
            if (q < quads) {
                smallm(q * 4u, s);
            }
        }
    }
}

// ---- split-k: C[i, j] (+)= Σ_s a[s * split_stride + i * n + j] (+ bias[j]) ----

// Two neighbouring columns per invocation (one word of packed float16 C: rows start on words).
@compute @workgroup_size(64)
fn mm_sum(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) li: u32) {
    let pairs = (p.n + 1u) / 2u;
    let units = pairs * p.m;
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let i = u / pairs;
        let j0 = (u - i * pairs) * 2u;
        for (var j = j0; j < min(j0 + 2u, p.n); j++) {
            var s = T(0.0);
            for (var q = 0u; q < p.splits; q++) {
                s += ld_a(q * p.split_stride + i * p.n + j);
            }
            put(p.c_off, i, j, s);
        }
    }
}

// The same sums for a packed float16 C whose rows do not start on words: one u32 word of
// C per invocation (like mm_naive_words).
@compute @workgroup_size(64)
fn mm_sum_words(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) li: u32) {
    let span = (p.m - 1u) * p.c_stride + p.n;
    let units = units_c(p.c_off, span);
    for (var u = (wg.y * nwg.x + wg.x) * 64u + li; u < units; u += nwg.x * nwg.y * 64u) {
        let e = unit_c(p.c_off, span, u);
        for (var r = e.x; r < e.x + e.y; r++) {
            let i = r / p.c_stride;
            let j = r % p.c_stride;
            if (j < p.n) {
                var s = T(0.0);
                for (var q = 0u; q < p.splits; q++) {
                    s += ld_a(q * p.split_stride + i * p.n + j);
                }
                put(p.c_off, i, j, s);
            }
        }
    }
}
