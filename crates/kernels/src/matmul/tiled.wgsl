// Register-tiled matmul, f32, vec4 loads: C[m×n] (+)= op(A)·op(B) (+ bias).
//
// A workgroup of WG invocations owns a tile of 32 rows × (WG·8) columns. Every invocation
// keeps 32×8 accumulators (16 blocks of 4×4, as mat4x4) and owns two vec4 columns,
// interleaved with its neighbours (columns 4·li and 4·(li + WG)), so neighbouring
// invocations read neighbouring vec4s of B. All invocations of a workgroup share the
// same 32 rows of A; how those rows reach them is in the `share` snippet appended to this
// file (subgroup broadcast, or every invocation loading them).
//
// The k loop has no bounds checks: rows past m and columns past n are clamped on load
// (they read valid memory of the same operand) and masked on store. k must be a multiple
// of 4 and every offset and stride a multiple of 4 elements; the host checks this and
// falls back to the naive kernel otherwise.

struct Params {
    m: u32, n: u32, k: u32, flags: u32,       // flags: 1 = accumulate into C, 2 = add bias
    a_off: u32, a_stride: u32, a_unused: u32, // A: first vec4, row stride in vec4s
    b_off: u32, b_stride: u32, b_unused: u32, // B: same
    c_off: u32, c_stride: u32,                // C: first element, row stride (scalars)
    bias_off: u32, p0: u32, p1: u32, p2: u32,
}

@group(0) @binding(0) var<storage, read_write> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> bias: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

// Invocations per workgroup; the host sets it (a multiple of 8).
override WG: u32 = 8u;

alias ABlocks = array<mat4x4<f32>, 8>; // 8 row blocks: columns = rows, components = k
alias BBlocks = array<mat4x4<f32>, 2>; // 2 column blocks: columns = k, components = cols
alias Acc = array<mat4x4<f32>, 16>;    // [row block * 2 + col block]: columns = rows

const FORM_NN: u32 = 0u;
const FORM_TN: u32 = 1u;
const FORM_NT: u32 = 2u;

// B not transposed (k rows × n cols): a vec4 holds 4 columns of one k row.
fn b_n(col0: u32, kk: u32) -> BBlocks {
    let last = (p.n - 1u) / 4u;
    let base = p.b_off + kk * 4u * p.b_stride;
    let c0 = min(col0 / 4u, last);
    let c1 = min(col0 / 4u + WG, last);
    return BBlocks(
        mat4x4<f32>(b[base + c0], b[base + p.b_stride + c0], b[base + 2u * p.b_stride + c0], b[base + 3u * p.b_stride + c0]),
        mat4x4<f32>(b[base + c1], b[base + p.b_stride + c1], b[base + 2u * p.b_stride + c1], b[base + 3u * p.b_stride + c1]),
    );
}

// B transposed (stored n rows × k): a vec4 holds 4 k values of one column.
fn b_t(col0: u32, kk: u32) -> BBlocks {
    return BBlocks(b_t_block(col0, kk), b_t_block(col0 + 4u * WG, kk));
}

fn b_t_block(col: u32, kk: u32) -> mat4x4<f32> {
    let last = p.n - 1u;
    let base = p.b_off + kk;
    return transpose(mat4x4<f32>(
        b[base + min(col, last) * p.b_stride],
        b[base + min(col + 1u, last) * p.b_stride],
        b[base + min(col + 2u, last) * p.b_stride],
        b[base + min(col + 3u, last) * p.b_stride],
    ));
}

fn fma_blocks(acc: ptr<function, Acc>, x: ABlocks, y: BBlocks) {
    (*acc)[0] += y[0] * x[0]; (*acc)[1] += y[1] * x[0];
    (*acc)[2] += y[0] * x[1]; (*acc)[3] += y[1] * x[1];
    (*acc)[4] += y[0] * x[2]; (*acc)[5] += y[1] * x[2];
    (*acc)[6] += y[0] * x[3]; (*acc)[7] += y[1] * x[3];
    (*acc)[8] += y[0] * x[4]; (*acc)[9] += y[1] * x[4];
    (*acc)[10] += y[0] * x[5]; (*acc)[11] += y[1] * x[5];
    (*acc)[12] += y[0] * x[6]; (*acc)[13] += y[1] * x[6];
    (*acc)[14] += y[0] * x[7]; (*acc)[15] += y[1] * x[7];
}

fn put(base: u32, col: u32, x: f32) {
    if (col < p.n) {
        var y = x;
        if ((p.flags & 2u) != 0u) {
            y += bias[p.bias_off + col];
        }
        if ((p.flags & 1u) != 0u) {
            y += c[base + col];
        }
        c[base + col] = y;
    }
}

fn store_block(blk: mat4x4<f32>, row: u32, col: u32) {
    let rows = array<vec4<f32>, 4>(blk[0], blk[1], blk[2], blk[3]);
    for (var r = 0u; r < 4u; r++) {
        if (row + r < p.m) {
            let base = p.c_off + (row + r) * p.c_stride;
            let v = rows[r];
            put(base, col, v.x);
            put(base, col + 1u, v.y);
            put(base, col + 2u, v.z);
            put(base, col + 3u, v.w);
        }
    }
}

fn store(acc: ptr<function, Acc>, row0: u32, col0: u32) {
    let col1 = col0 + 4u * WG;
    store_block((*acc)[0], row0, col0); store_block((*acc)[1], row0, col1);
    store_block((*acc)[2], row0 + 4u, col0); store_block((*acc)[3], row0 + 4u, col1);
    store_block((*acc)[4], row0 + 8u, col0); store_block((*acc)[5], row0 + 8u, col1);
    store_block((*acc)[6], row0 + 12u, col0); store_block((*acc)[7], row0 + 12u, col1);
    store_block((*acc)[8], row0 + 16u, col0); store_block((*acc)[9], row0 + 16u, col1);
    store_block((*acc)[10], row0 + 20u, col0); store_block((*acc)[11], row0 + 20u, col1);
    store_block((*acc)[12], row0 + 24u, col0); store_block((*acc)[13], row0 + 24u, col1);
    store_block((*acc)[14], row0 + 28u, col0); store_block((*acc)[15], row0 + 28u, col1);
}

// Walks this workgroup's tiles (a grid-stride loop, so any tile count fits the
// workgroup-count limit). `lane` is the invocation's index inside its subgroup.
fn tiles(form: u32, wg: vec3<u32>, nwg: vec3<u32>, li: u32, lane: u32) {
    let tiles_m = (p.m + 31u) / 32u;
    let tiles_n = (p.n + 8u * WG - 1u) / (8u * WG);
    let k4 = p.k / 4u;
    for (var ty = wg.y; ty < tiles_m; ty += nwg.y) {
        for (var tx = wg.x; tx < tiles_n; tx += nwg.x) {
            let row0 = ty * 32u;
            let col0 = tx * 8u * WG + 4u * li;
            var acc: Acc;
            for (var kk = 0u; kk < k4; kk++) {
                if (form == FORM_TN) {
                    fma_blocks(&acc, a_t(row0, kk, lane), b_n(col0, kk));
                } else if (form == FORM_NT) {
                    fma_blocks(&acc, a_n(row0, kk, lane), b_t(col0, kk));
                } else {
                    fma_blocks(&acc, a_n(row0, kk, lane), b_n(col0, kk));
                }
            }
            store(&acc, row0, col0);
        }
    }
}
