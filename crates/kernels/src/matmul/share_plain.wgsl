// Rows of A for a 32-row tile, loaded by every invocation itself (32 vec4 loads per k
// step): for devices without subgroups.

fn a_n_row(row: u32, kk: u32) -> vec4<f32> {
    return a[p.a_off + kk + min(row, p.m - 1u) * p.a_stride];
}

fn a_n_block(row: u32, kk: u32) -> mat4x4<f32> {
    return mat4x4<f32>(a_n_row(row, kk), a_n_row(row + 1u, kk), a_n_row(row + 2u, kk), a_n_row(row + 3u, kk));
}

fn a_n(row0: u32, kk: u32, lane: u32) -> ABlocks {
    return ABlocks(
        a_n_block(row0, kk), a_n_block(row0 + 4u, kk), a_n_block(row0 + 8u, kk), a_n_block(row0 + 12u, kk),
        a_n_block(row0 + 16u, kk), a_n_block(row0 + 20u, kk), a_n_block(row0 + 24u, kk), a_n_block(row0 + 28u, kk),
    );
}

fn a_t_block(row: u32, kk: u32) -> mat4x4<f32> {
    let base = p.a_off + kk * 4u * p.a_stride + min(row / 4u, (p.m - 1u) / 4u);
    return transpose(mat4x4<f32>(a[base], a[base + p.a_stride], a[base + 2u * p.a_stride], a[base + 3u * p.a_stride]));
}

fn a_t(row0: u32, kk: u32, lane: u32) -> ABlocks {
    return ABlocks(
        a_t_block(row0, kk), a_t_block(row0 + 4u, kk), a_t_block(row0 + 8u, kk), a_t_block(row0 + 12u, kk),
        a_t_block(row0 + 16u, kk), a_t_block(row0 + 20u, kk), a_t_block(row0 + 24u, kk), a_t_block(row0 + 28u, kk),
    );
}

@compute @workgroup_size(WG)
fn mm_nn(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) li: u32) {
    tiles(FORM_NN, wg, nwg, li, 0u);
}

@compute @workgroup_size(WG)
fn mm_tn(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) li: u32) {
    tiles(FORM_TN, wg, nwg, li, 0u);
}

@compute @workgroup_size(WG)
fn mm_nt(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) li: u32) {
    tiles(FORM_NT, wg, nwg, li, 0u);
}
