// Softmax cross-entropy, one row per invocation (the MLP has few classes), computed in T.
// Per row: loss = logsumexp(z) - z[label], correct = argmax(z) == label,
// dlogits = (softmax(z) - onehot(label)) * scale. Stable: exp(z - max).
// A label >= cols gives loss NaN, so a bad label cannot go unnoticed.
// Bindings logits, labels, stats, dlogits and their accessors come from the generated
// prelude; stats and dlogits are never packed float16 (the host refuses it).

struct Params {
    rows: u32, cols: u32, p0: u32, p1: u32,
    off: vec4<u32>,   // first element of logits, labels, stats, dlogits in their bindings
    f: vec4<f32>,     // f.x = scale
    g: vec4<f32>,
}

@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(64)
fn softmax_xent(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var r = (wg.y * nwg.x + wg.x) * 64u + li; r < p.rows; r += nwg.x * nwg.y * 64u) {
        let z = p.off.x + r * p.cols;
        let d = p.off.w + r * p.cols;
        let label = ld_labels(p.off.y + r);
        var best = ld_logits(z);
        var arg = 0u;
        for (var j = 1u; j < p.cols; j++) {
            let x = ld_logits(z + j);
            if (x > best) {
                best = x;
                arg = j;
            }
        }
        var sum = T(0.0);
        for (var j = 0u; j < p.cols; j++) {
            sum += exp_t(ld_logits(z + j) - best);
        }
        var picked = T(bitcast<f32>(0x7fc00000u)); // NaN unless the label is a valid class
        if (label < p.cols) {
            picked = ld_logits(z + label) - best;
        }
        let s = p.off.z + r * 2u;
        st_stats(s, log_t(sum) - picked);
        st_stats(s + 1u, select(T(0.0), T(1.0), arg == label));
        for (var j = 0u; j < p.cols; j++) {
            let q = exp_t(ld_logits(z + j) - best) / sum;
            st_dlogits(d + j, (q - select(T(0.0), T(1.0), j == label)) * T(p.f.x));
        }
    }
}
