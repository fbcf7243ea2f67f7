// Naive matmul: one output per invocation, any strides (so any transposes and any
// alignment). The baseline in the bench, and the fallback for pieces the tiled kernel
// cannot take (odd sizes, unaligned offsets, k tails, gathered rows).

struct Params {
    m: u32, n: u32, k: u32, flags: u32,      // flags: 1 = accumulate into C, 2 = add bias
    a_off: u32, a_rs: u32, a_cs: u32,        // op(A)[i, k] = a[a_off + i * a_rs + k * a_cs]
    b_off: u32, b_rs: u32, b_cs: u32,        // op(B)[k, j] = b[b_off + k * b_rs + j * b_cs]
    c_off: u32, c_stride: u32,
    bias_off: u32, p0: u32, p1: u32, p2: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> bias: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

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
                var s = 0.0;
                for (var k = 0u; k < p.k; k++) {
                    s = fma(a[p.a_off + i * p.a_rs + k * p.a_cs], b[p.b_off + k * p.b_rs + j * p.b_cs], s);
                }
                if ((p.flags & 2u) != 0u) {
                    s += bias[p.bias_off + j];
                }
                let at = p.c_off + i * p.c_stride + j;
                if ((p.flags & 1u) != 0u) {
                    s += c[at];
                }
                c[at] = s;
            }
        }
    }
}
