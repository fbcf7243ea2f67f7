// log_softmax then nll_loss_one in one dispatch, for a float32 batch that is one piece of
// at most WG rows (xent/fused.rs). Bindings a = x, b = loss, c = total_weight, labels, and
// d = logp (its first element in p.first); the uniform is at binding 5.
//
// Each row is written by the invocation that nll_loss_one's stride gives it, and that
// invocation reads back the value it stored at the row's label, so logp, the loss and
// total_weight have the bits the two kernels write.
@compute @workgroup_size(256)
fn log_softmax_nll_loss(@builtin(local_invocation_index) li: u32) {
    var s = T(0.0);
    for (var r = li; r < p.rows; r += WG) {
        let x = p.off.x + r * p.cols;
        let o = p.first + r * p.cols;
        let ml = row_lse(x);
        for (var j = 0u; j < p.cols; j++) {
            st_d(o + j, (ld_a(x + j) - ml.x) - ml.y);
        }
        let y = class_of(r);
        if (y < p.cols) {
            s += ld_d(o + y);
        } else {
            s += T(bitcast<f32>(0x7fc00000u));
        }
    }
    tree_sum(li, s);
    if (li == 0u) {
        let n = T(p.rows);
        st_b(p.off.y, -partial[0] / n);
        st_c(p.off.z, n);
    }
}
