use gpumem_kernels::{Gemm, GpuError, GpuOptions, KernelError, Matrix};

use crate::common::*;

#[test]
fn shape_and_layout_errors_are_values() {
    let Some(ctx) = ctx() else { return };
    let s = Stored::new(ctx, &[0f32; 64], &[]);
    let parts = s.parts();
    let mut e = ctx.gpu.device.create_command_encoder(&Default::default());
    let m8x8 = matrix(&parts, 8, 8);
    let m4x16 = matrix(&parts, 4, 16);

    let bad = Gemm {
        a: m8x8,
        trans_a: false,
        b: m4x16,
        trans_b: false,
        c: m8x8,
        accumulate: false,
        bias: None,
    };
    assert!(matches!(
        ctx.full.matmul(&mut e, &bad),
        Err(KernelError::Shape(_))
    ));
    let bias = Some(matrix(&parts, 1, 64));
    let bad = Gemm {
        a: m8x8,
        trans_a: false,
        b: m8x8,
        trans_b: false,
        c: m8x8,
        accumulate: false,
        bias,
    };
    assert!(matches!(
        ctx.full.matmul(&mut e, &bad),
        Err(KernelError::Shape(_))
    ));
    assert!(matches!(
        ctx.full.relu(&mut e, &m8x8, &matrix(&parts, 4, 4)),
        Err(KernelError::Shape(_))
    ));

    // Parts that do not hold the matrix, or are misaligned.
    let too_big = matrix(&parts, 9, 8);
    assert!(matches!(
        ctx.full.scale(&mut e, &too_big, 2.0),
        Err(KernelError::Parts { .. })
    ));
    let odd = [gpumem_kernels::Part {
        offset: parts[0].offset + 2,
        len: 4,
        ..parts[0]
    }];
    assert!(matches!(
        ctx.full.scale(&mut e, &matrix(&odd, 1, 1), 2.0),
        Err(KernelError::Parts { .. })
    ));

    // Labels must be u32, logits f32.
    let st = matrix(&parts, 8, 2);
    let r = ctx
        .full
        .softmax_xent(&mut e, &m8x8, &matrix(&parts, 8, 1), &st, &m8x8, 1.0);
    assert!(matches!(r, Err(KernelError::DType { .. })));

    // A row wider than the (tiny, 4 KiB) binding.
    let wide = Stored::new(ctx, &vec![0f32; 2048], &[]);
    let wp = wide.parts();
    let row = matrix(&wp, 1, 2048);
    let g = Gemm {
        a: row,
        trans_a: false,
        b: matrix(&wp, 2048, 1),
        trans_b: false,
        c: matrix(&parts, 1, 1),
        accumulate: false,
        bias: None,
    };
    assert!(matches!(
        ctx.tiny.matmul(&mut e, &g),
        Err(KernelError::RowTooLarge { .. })
    ));
    // Flat kernels can cut anywhere, so the same tensor is fine for them.
    ctx.tiny
        .scale(&mut e, &row, 1.0)
        .expect("flat kernels take any length");

    drop(e);
    assert!(ctx.gpu.take_errors().is_empty());
}

#[test]
fn adapter_facts() {
    let Some(ctx) = ctx() else { return };
    let gpu = &ctx.gpu;
    assert!(!gpu.is_lost());
    assert!(gpu.limits().max_storage_buffer_binding_size >= 4096);
    let hardware = gpu.is_hardware();
    let r = gumem_require_hardware();
    match r {
        Ok(g) => assert!(g.is_hardware()),
        Err(GpuError::NoHardwareAdapter(_)) => assert!(!hardware),
        Err(e) => panic!("unexpected: {e}"),
    }
    let _ = Matrix::row_vector(&[], 0);
}

fn gumem_require_hardware() -> Result<gpumem_kernels::Gpu, GpuError> {
    gpumem_kernels::Gpu::new(&GpuOptions {
        require_hardware: true,
        ..Default::default()
    })
}
