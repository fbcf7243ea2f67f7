//! The kernels on a device opened with `wgpu::Limits::downlevel_defaults()`, the limits
//! every adapter offers (4 storage buffers per stage, 256-byte offset alignment, 128 MiB
//! bindings, 256 invocations per workgroup), instead of the adapter's own: the same checks
//! as under the adapter's limits, one per kernel family and element type.

use crate::common::{Ctx, downlevel_ctx};

#[test]
fn the_device_has_the_downlevel_limits() {
    let Some(ctx) = downlevel_ctx() else { return };
    let (got, want) = (ctx.gpu.limits(), wgpu::Limits::downlevel_defaults());
    assert_eq!(
        got.max_storage_buffers_per_shader_stage,
        want.max_storage_buffers_per_shader_stage
    );
    assert_eq!(
        got.min_storage_buffer_offset_alignment,
        want.min_storage_buffer_offset_alignment
    );
    let planned = ctx.full.limits();
    assert_eq!(
        planned.max_binding,
        want.max_storage_buffer_binding_size & !31
    );
    assert_eq!(
        planned.offset_align,
        u64::from(want.min_storage_buffer_offset_alignment)
    );
}

/// A check on a context, named.
type Check = (&'static str, fn(&Ctx));

/// Every check that takes a context, on the downlevel device.
const CHECKS: [Check; 18] = [
    (
        "matmul",
        crate::matmul::all_forms_odd_shapes_device_limits_on,
    ),
    (
        "matmul, tiny limits",
        crate::matmul::tiny_limits_split_buffers_on,
    ),
    ("relu", crate::elementwise::relu_forward_and_backward_on),
    ("scale, add", crate::elementwise::scale_and_add_on),
    ("colsum", crate::reduce::colsum_matches_reference_on),
    (
        "softmax_xent",
        crate::loss::softmax_xent_matches_reference_on,
    ),
    (
        "copy",
        crate::elementwise::copy_converts_between_float_types_on,
    ),
    (
        "adam_denom",
        crate::elementwise::adam_denom_matches_reference_on,
    ),
    ("fill", crate::elementwise::fill_writes_every_element_on),
    (
        "threshold_backward",
        crate::ternary::threshold_backward_matches_reference_on,
    ),
    (
        "log_softmax",
        crate::xent::log_softmax_and_backward_match_reference_on,
    ),
    (
        "nll_loss",
        crate::xent::nll_loss_and_backward_match_reference_on,
    ),
    ("sgd", crate::optim::sgd_step_on),
    ("adam", crate::optim::adam_three_steps_like_pytorch_on),
    (
        "float16 matmul",
        crate::dtypes::float16_matmul_every_kernel_and_layout_on,
    ),
    (
        "float16 flat",
        crate::dtypes::float16_elementwise_and_colsum_odd_lengths_on,
    ),
    (
        "float64 matmul",
        crate::dtypes::float64::float64_matmul_every_kernel_on,
    ),
    (
        "float64 step",
        crate::dtypes::float64::float64_step_kernels_on,
    ),
];

#[test]
fn every_kernel_within_the_downlevel_limits() {
    let Some(ctx) = downlevel_ctx() else { return };
    for (what, check) in CHECKS {
        eprintln!("downlevel limits: {what}");
        check(ctx);
    }
}
