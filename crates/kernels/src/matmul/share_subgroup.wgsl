// Rows of A for a 32-row tile, shared through subgroup broadcasts: lane q (q < 8) loads
// rows q, q+8, q+16, q+24 (one vec4 each), then every lane takes row i from lane i % 8.
// Four loads per lane instead of 32. Correct for any subgroup size >= 8, because all
// invocations of a workgroup work on the same rows (the host checks the size).

// A not transposed (m rows × k): a vec4 holds 4 k values of one row.
fn a_n(row0: u32, kk: u32, lane: u32) -> ABlocks {
    let q = lane % 8u;
    let last = p.m - 1u;
    let base = p.a_off + kk;
    let m0 = a[base + min(row0 + q, last) * p.a_stride];
    let m1 = a[base + min(row0 + q + 8u, last) * p.a_stride];
    let m2 = a[base + min(row0 + q + 16u, last) * p.a_stride];
    let m3 = a[base + min(row0 + q + 24u, last) * p.a_stride];
    return ABlocks(
        mat4x4<f32>(subgroupBroadcast(m0, 0u), subgroupBroadcast(m0, 1u), subgroupBroadcast(m0, 2u), subgroupBroadcast(m0, 3u)),
        mat4x4<f32>(subgroupBroadcast(m0, 4u), subgroupBroadcast(m0, 5u), subgroupBroadcast(m0, 6u), subgroupBroadcast(m0, 7u)),
        mat4x4<f32>(subgroupBroadcast(m1, 0u), subgroupBroadcast(m1, 1u), subgroupBroadcast(m1, 2u), subgroupBroadcast(m1, 3u)),
        mat4x4<f32>(subgroupBroadcast(m1, 4u), subgroupBroadcast(m1, 5u), subgroupBroadcast(m1, 6u), subgroupBroadcast(m1, 7u)),
        mat4x4<f32>(subgroupBroadcast(m2, 0u), subgroupBroadcast(m2, 1u), subgroupBroadcast(m2, 2u), subgroupBroadcast(m2, 3u)),
        mat4x4<f32>(subgroupBroadcast(m2, 4u), subgroupBroadcast(m2, 5u), subgroupBroadcast(m2, 6u), subgroupBroadcast(m2, 7u)),
        mat4x4<f32>(subgroupBroadcast(m3, 0u), subgroupBroadcast(m3, 1u), subgroupBroadcast(m3, 2u), subgroupBroadcast(m3, 3u)),
        mat4x4<f32>(subgroupBroadcast(m3, 4u), subgroupBroadcast(m3, 5u), subgroupBroadcast(m3, 6u), subgroupBroadcast(m3, 7u)),
    );
}

// A transposed (stored k rows × m): a vec4 holds 4 rows of one k. Lane q loads rows
// 4q..4q+3 for the 4 k values; row block i comes from lane i.
fn a_t(row0: u32, kk: u32, lane: u32) -> ABlocks {
    let q = lane % 8u;
    let r4 = min(row0 / 4u + q, (p.m - 1u) / 4u);
    let base = p.a_off + kk * 4u * p.a_stride + r4;
    let m0 = a[base];
    let m1 = a[base + p.a_stride];
    let m2 = a[base + 2u * p.a_stride];
    let m3 = a[base + 3u * p.a_stride];
    return ABlocks(
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 0u), subgroupBroadcast(m1, 0u), subgroupBroadcast(m2, 0u), subgroupBroadcast(m3, 0u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 1u), subgroupBroadcast(m1, 1u), subgroupBroadcast(m2, 1u), subgroupBroadcast(m3, 1u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 2u), subgroupBroadcast(m1, 2u), subgroupBroadcast(m2, 2u), subgroupBroadcast(m3, 2u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 3u), subgroupBroadcast(m1, 3u), subgroupBroadcast(m2, 3u), subgroupBroadcast(m3, 3u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 4u), subgroupBroadcast(m1, 4u), subgroupBroadcast(m2, 4u), subgroupBroadcast(m3, 4u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 5u), subgroupBroadcast(m1, 5u), subgroupBroadcast(m2, 5u), subgroupBroadcast(m3, 5u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 6u), subgroupBroadcast(m1, 6u), subgroupBroadcast(m2, 6u), subgroupBroadcast(m3, 6u))),
        transpose(mat4x4<f32>(subgroupBroadcast(m0, 7u), subgroupBroadcast(m1, 7u), subgroupBroadcast(m2, 7u), subgroupBroadcast(m3, 7u))),
    );
}

@compute @workgroup_size(WG)
fn mm_nn(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) li: u32, @builtin(subgroup_invocation_id) lane: u32) {
    tiles(FORM_NN, wg, nwg, li, lane);
}

@compute @workgroup_size(WG)
fn mm_tn(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) li: u32, @builtin(subgroup_invocation_id) lane: u32) {
    tiles(FORM_TN, wg, nwg, li, lane);
}

@compute @workgroup_size(WG)
fn mm_nt(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) li: u32, @builtin(subgroup_invocation_id) lane: u32) {
    tiles(FORM_NT, wg, nwg, li, lane);
}
