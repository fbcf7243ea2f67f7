// PyTorch's cross-entropy as the ops it decomposes into: log_softmax, nll_loss (mean) and
// their backwards, computed in T. Row kernels take one row per invocation (the MLP has few
// classes), walked with a grid-stride loop; nll_sum is one workgroup's tree sum, so the
// loss is the same bits on every run.
//
// Bindings a, b, c (floats) and labels (u32 words) and their accessors (st2_a, st2_c store
// two elements) come from the generated prelude; what each entry point keeps in them is
// said above it. A row output may be packed float16 only when its rows cover whole words
// (even cols, even offset: the host checks), so each invocation stores its row's pairs
// with st2 and no two invocations share a word; the odd tail (cols odd) is never packed.
// Scalars are never packed.

struct Params {
    rows: u32,        // rows in this piece (nll_mean: the whole batch)
    cols: u32,        // classes
    stride: u32,      // u32 words per label: 1 (u32) or 2 (int64, low word first)
    first: u32,       // nll_sum: 1 in the first piece (the running sum starts at zero)
    off: vec4<u32>,   // first element of a, b, c, and first word of labels, in their bindings
    f: vec4<f32>,
    g: vec4<f32>,
}

// The uniform `p` is declared by the host after this source (binding 4 here, 5 in the
// fused module of xent/fused.rs, which binds a fifth buffer).

// The class of row r: its label, or cols when the label is out of range (>= cols, or an
// int64 label with a non-zero high word).
fn class_of(r: u32) -> u32 {
    let w = p.off.w + r * p.stride;
    var y = ld_labels(w);
    if (p.stride == 2u && ld_labels(w + 1u) != 0u) {
        y = p.cols;
    }
    return min(y, p.cols);
}

// c = a - max - log(sum(exp(a - max))) per row (a = x, c = out).
@compute @workgroup_size(64)
fn log_softmax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var r = (wg.y * nwg.x + wg.x) * 64u + li; r < p.rows; r += nwg.x * nwg.y * 64u) {
        let x = p.off.x + r * p.cols;
        let o = p.off.z + r * p.cols;
        let ml = row_lse(x);
        let m = ml.x;
        let ls = ml.y;
        var j = 0u;
        for (; j + 1u < p.cols; j += 2u) {
            st2_c(o + j, (vec2<T>(ld_a(x + j), ld_a(x + j + 1u)) - m) - ls);
        }
        if (j < p.cols) {
            st_c(o + j, (ld_a(x + j) - m) - ls);
        }
    }
}

// The max of the row of a at element x and the log of the sum of exp(a - max) over it.
fn row_lse(x: u32) -> vec2<T> {
    var m = ld_a(x);
    for (var j = 1u; j < p.cols; j++) {
        m = max(m, ld_a(x + j));
    }
    var s = T(0.0);
    for (var j = 0u; j < p.cols; j++) {
        s += exp_t(ld_a(x + j) - m);
    }
    return vec2<T>(m, log_t(s));
}

// c = a - exp(b) * sum(a) per row (a = grad, b = logp, c = out).
@compute @workgroup_size(64)
fn log_softmax_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var r = (wg.y * nwg.x + wg.x) * 64u + li; r < p.rows; r += nwg.x * nwg.y * 64u) {
        let g = p.off.x + r * p.cols;
        let l = p.off.y + r * p.cols;
        let o = p.off.z + r * p.cols;
        var s = T(0.0);
        for (var j = 0u; j < p.cols; j++) {
            s += ld_a(g + j);
        }
        var j = 0u;
        for (; j + 1u < p.cols; j += 2u) {
            let e = vec2<T>(exp_t(ld_b(l + j)), exp_t(ld_b(l + j + 1u)));
            st2_c(o + j, vec2<T>(ld_a(g + j), ld_a(g + j + 1u)) - e * s);
        }
        if (j < p.cols) {
            st_c(o + j, ld_a(g + j) - exp_t(ld_b(l + j)) * s);
        }
    }
}

const WG: u32 = 256u;
var<workgroup> partial: array<T, WG>;

// The sum over this piece's rows of a[r, label r] (a = logp), in partial[0]; NaN for an
// out-of-range label. One workgroup: each invocation strides over rows, then a tree sum in
// a fixed order.
fn picked_sum(li: u32) {
    var s = T(0.0);
    for (var r = li; r < p.rows; r += WG) {
        let y = class_of(r);
        if (y < p.cols) {
            s += ld_a(p.off.x + r * p.cols + y);
        } else {
            s += T(bitcast<f32>(0x7fc00000u));
        }
    }
    tree_sum(li, s);
}

// The sum of every invocation's s, in partial[0], in a fixed order.
fn tree_sum(li: u32, s: T) {
    partial[li] = s;
    workgroupBarrier();
    for (var w = WG / 2u; w > 0u; w >>= 1u) {
        if (li < w) {
            partial[li] += partial[li + w];
        }
        workgroupBarrier();
    }
}

// b[0] (+)= this piece's sum (b = the running sum in T).
@compute @workgroup_size(256)
fn nll_sum(@builtin(local_invocation_index) li: u32) {
    picked_sum(li);
    if (li == 0u) {
        var total = partial[0];
        if (p.first == 0u) {
            total = ld_b(p.off.y) + total;
        }
        st_b(p.off.y, total);
    }
}

// nll_sum then nll_mean in one dispatch, for a batch that is one piece: b = -sum / rows,
// c = rows (a = logp, b = loss, c = total_weight), the same values the two write.
@compute @workgroup_size(256)
fn nll_loss_one(@builtin(local_invocation_index) li: u32) {
    picked_sum(li);
    if (li == 0u) {
        let n = T(p.rows);
        st_b(p.off.y, -partial[0] / n);
        st_c(p.off.z, n);
    }
}

// b = -a / rows, c = rows (a = the running sum, b = loss, c = total_weight). NaN for an
// empty batch, as PyTorch's mean over nothing.
@compute @workgroup_size(1)
fn nll_mean() {
    let n = T(p.rows);
    var loss = T(bitcast<f32>(0x7fc00000u));
    if (p.rows > 0u) {
        loss = -ld_a(p.off.x) / n;
    }
    st_b(p.off.y, loss);
    st_c(p.off.z, n);
}

// a[r, j] = -b / c where j is row r's label, else 0; a row with an out-of-range label is
// all zeros (a = out, b = grad_loss, c = total_weight).
@compute @workgroup_size(64)
fn nll_loss_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    nll_backward_rows(-ld_b(p.off.y) / ld_c(p.off.z), wg, nwg, li);
}

// fill then nll_loss_backward, for a batch that is one piece (xent/fused.rs): b = f.x (the
// gradient of ones the backward pass starts from) and a as nll_loss_backward writes it from
// that value (read from the uniform, so no invocation reads b).
@compute @workgroup_size(64)
fn fill_nll_loss_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let g = T(p.f.x);
    if (wg.x == 0u && wg.y == 0u && li == 0u) {
        st_b(p.off.y, g);
    }
    nll_backward_rows(-g / ld_c(p.off.z), wg, nwg, li);
}

// a[r, j] = v where j is row r's label, else 0 (a row with an out-of-range label: zeros).
fn nll_backward_rows(v: T, wg: vec3<u32>, nwg: vec3<u32>, li: u32) {
    for (var r = (wg.y * nwg.x + wg.x) * 64u + li; r < p.rows; r += nwg.x * nwg.y * 64u) {
        let y = class_of(r);
        let o = p.off.x + r * p.cols;
        var j = 0u;
        for (; j + 1u < p.cols; j += 2u) {
            st2_a(o + j, vec2<T>(select(T(0.0), v, j == y), select(T(0.0), v, j + 1u == y)));
        }
        if (j < p.cols) {
            st_a(o + j, select(T(0.0), v, j == y));
        }
    }
}
