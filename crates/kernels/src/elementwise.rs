//! Elementwise kernels: `relu`, `relu_backward`, `scale`, `add`, `unscale_check`, `copy`,
//! `adam_denom`, `fill`.
//!
//! Elementwise operands are viewed flat (`len × 1`), so pieces can be cut at any element
//! and no row ever straddles two parts. Operands may be float32, float16 or float64 (each
//! its own); a kernel computes in f64 when any of them is float64, in f32 otherwise.

use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::{Operand, check_parts, segments};
use crate::record::{Dispatch, grid, record};
use crate::shader::{Compute, Layout, Store, prelude};
use crate::view::{DType, Matrix};
use wgpu::util::DeviceExt as _;

/// The elementwise kernels: `x1 = f(x0)` or `x0 = f(x0, x1)`.
pub(crate) const ELEMENTWISE: FlatFamily = FlatFamily {
    name: "elementwise",
    source: include_str!("elementwise.wgsl"),
    bindings: &["x0", "x1"],
};

/// Uniforms shared by the flat kernels (64 bytes, WGSL `Params` in each .wgsl file).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct FlatParams {
    pub n: [u32; 4],
    pub off: [u32; 4],
    pub f: [f32; 4],
    pub g: [f32; 4],
}

/// How a flat kernel uses an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    /// Written, one unit (element, or word of packed float16) per invocation: the kernel
    /// walks this operand's units. At most one per kernel.
    Walk,
    /// Written at the same index as the walked operand, or (for a scalar) by many
    /// invocations with one value: never packed float16, whose words would be shared.
    Write,
}

/// One flat operand: name for errors, the matrix, how the kernel uses it.
pub(crate) type FlatOperand<'a, 'm> = (&'static str, &'m Matrix<'a>, Access);

/// A family of flat kernels: one WGSL file (after the generated prelude) and its binding
/// names (in slot order; their count is the layout's).
pub(crate) struct FlatFamily {
    pub name: &'static str,
    pub source: &'static str,
    pub bindings: &'static [&'static str],
}

impl FlatFamily {
    /// The module's WGSL for bindings stored as `stores` (one per binding), declared as
    /// `decl`.
    pub fn source(&self, stores: &[Store], decl: Layout) -> String {
        let bindings: Vec<(&str, Store)> = self
            .bindings
            .iter()
            .copied()
            .zip(stores.iter().copied())
            .collect();
        let mut s = prelude(Compute::of(stores), &bindings, decl);
        s.push_str(self.source);
        s
    }
}

/// One flat kernel: its family and entry point.
pub(crate) struct Flat {
    pub family: &'static FlatFamily,
    pub entry: &'static str,
}

/// The storage of every slot of a flat kernel: the operands', then the compute type's
/// for unused slots.
fn slot_stores(
    k: &Kernels,
    kernel: &Flat,
    operands: &[FlatOperand<'_, '_>],
) -> Result<Vec<Store>, KernelError> {
    let mut stores = Vec::new();
    for (name, m, access) in operands {
        if !m.dtype.is_float() {
            return Err(KernelError::DType {
                name: name.to_string(),
                expected: DType::F32,
                got: m.dtype,
            });
        }
        let s = k.store(m.dtype)?;
        if s == Store::F16Packed && *access == Access::Write {
            return Err(KernelError::Unsupported(format!(
                "{}: {name} is written by many invocations and cannot be packed float16 \
                 (use float32, or a device with SHADER_F16)",
                kernel.entry
            )));
        }
        stores.push(s);
    }
    let compute = Compute::of(&stores);
    while stores.len() < kernel.family.bindings.len() {
        stores.push(compute.store());
    }
    Ok(stores)
}

/// The pipeline of `kernel` for `operands`' storage, declared as `decl`.
pub(crate) fn flat_pipeline(
    k: &Kernels,
    kernel: &Flat,
    layout: &wgpu::PipelineLayout,
    operands: &[FlatOperand<'_, '_>],
    decl: Layout,
) -> Result<wgpu::ComputePipeline, KernelError> {
    let stores = slot_stores(k, kernel, operands)?;
    let tags: Vec<&str> = stores.iter().map(|s| s.tag()).collect();
    let family = kernel.family;
    let key = format!("{}/{decl:?}/{}", family.name, tags.join("/"));
    k.cache.get(&k.device, layout, &key, kernel.entry, &[], || {
        family.source(&stores, decl)
    })
}

/// Plans a flat kernel over `operands` of equal length, one dispatch per common piece;
/// `scalars` (one element each, e.g. a flag) follow them in the binding order, bound whole
/// in every piece; unused bindings get the dummy buffer.
pub(crate) fn flat<'a>(
    k: &'a Kernels,
    kernel: &Flat,
    layouts: (&'a wgpu::BindGroupLayout, &wgpu::PipelineLayout),
    operands: &[FlatOperand<'a, '_>],
    scalars: &[FlatOperand<'a, '_>],
    f: [f32; 4],
    g: [f32; 4],
) -> Result<Vec<Dispatch<'a>>, KernelError> {
    let all: Vec<FlatOperand<'a, '_>> = operands.iter().chain(scalars).copied().collect();
    let n = operands.first().map_or(0, |o| o.1.len());
    let mut ops = Vec::new();
    for (name, m, _) in operands {
        if m.len() != n {
            return Err(KernelError::Shape(format!(
                "{name} has {} elements, {} has {n}",
                m.len(),
                operands[0].0
            )));
        }
        // Pieces of whole quads, so the engine's tensors (512-byte aligned) stay aligned.
        ops.push(Operand::new(name, &m.flat(), &k.limits, 4)?);
    }
    let mut fixed = Vec::new();
    for (name, m, _) in scalars {
        if m.len() != 1 {
            return Err(KernelError::Shape(format!(
                "{name} has {} elements, expected one",
                m.len()
            )));
        }
        fixed.push(Operand::new(name, &m.flat(), &k.limits, 1)?);
    }
    let writes = all
        .iter()
        .enumerate()
        .filter(|(_, o)| o.2 != Access::Read)
        .fold(0, |w, (i, _)| w | 1 << i);
    let refs: Vec<&Operand<'a>> = ops.iter().collect();
    let mut planned = Vec::new();
    for (s, e) in segments(n, &refs) {
        let mut storage: Vec<_> = ops.iter().map(|o| o.bind(s, e)).collect();
        storage.extend(fixed.iter().map(|o| o.bind(0, 1)));
        let mut off = [0u32; 4];
        for (o, b) in off.iter_mut().zip(&storage) {
            *o = b.elem() as u32;
        }
        // Every operand's quads line up with the walked one's: whole quads use vec4s.
        let aligned = off[..ops.len()].iter().all(|&o| o % 4 == off[0] % 4);
        while storage.len() < kernel.family.bindings.len() {
            storage.push(k.dummy_bind());
        }
        planned.push((s, e, storage, off, aligned));
    }
    // Arrays of quads where every binding of the call holds whole quads.
    let decl = if planned.iter().all(|p| p.2.iter().all(|b| b.quads())) {
        Layout::Quads
    } else {
        Layout::Scalar
    };
    let pipeline = flat_pipeline(k, kernel, layouts.1, &all, decl)?;
    let mut out = Vec::new();
    for (s, e, storage, off, aligned) in planned {
        let params = FlatParams {
            n: [(e - s) as u32, u32::from(aligned), 0, 0],
            off,
            f,
            g,
        };
        out.push(Dispatch {
            pipeline: pipeline.clone(),
            layout: layouts.0,
            storage,
            writes,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: grid(flat_groups(k, e - s), k.limits.max_workgroups),
        });
    }
    Ok(out)
}

/// Workgroups of a flat kernel over a piece of `n` elements: one quad per invocation
/// on a GPU; with a CPU adapter's plans (lavapipe) at most `FLAT_GROUPS_CPU`, each invocation
/// looping over many quads, since every workgroup there costs µs of its own.
pub(crate) fn flat_groups(k: &Kernels, n: u64) -> u64 {
    let one_each = n.div_ceil(4).div_ceil(64) + 1;
    if k.limits.cpu_plans {
        one_each.min(FLAT_GROUPS_CPU)
    } else {
        one_each
    }
}

/// Most workgroups of a flat kernel on a CPU adapter: two per core of the 2-core machine
/// it was measured on (`NOTES.md`, "Flat kernels").
const FLAT_GROUPS_CPU: u64 = 4;

impl Kernels {
    /// `dst = max(src, 0)`. `src` and `dst` may be the same tensor.
    pub fn relu(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &Matrix<'_>,
        dst: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("src", src, Access::Read), ("dst", dst, Access::Walk)];
        self.run_flat2(encoder, "relu", &ops, &[], NO_SCALARS)
    }

    /// `grad *= (activation > 0)`, in place. `activation` may be the ReLU's input or its
    /// output (both are positive at the same places).
    pub fn relu_backward(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grad: &Matrix<'_>,
        activation: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [
            ("grad", grad, Access::Walk),
            ("activation", activation, Access::Read),
        ];
        self.run_flat2(encoder, "relu_backward", &ops, &[], NO_SCALARS)
    }

    /// `x *= factor`.
    pub fn scale(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &Matrix<'_>,
        factor: f32,
    ) -> Result<(), KernelError> {
        let f = [[factor, 0.0, 0.0, 0.0], [0.0; 4]];
        self.run_flat2(encoder, "scale", &[("x", x, Access::Walk)], &[], f)
    }

    /// `dst += src`.
    pub fn add(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dst: &Matrix<'_>,
        src: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("dst", dst, Access::Walk), ("src", src, Access::Read)];
        self.run_flat2(encoder, "add", &ops, &[], NO_SCALARS)
    }

    /// `x *= factor`, and `flag[0] = 1` if any result is infinite or NaN (left alone
    /// otherwise, so one flag can collect several tensors): how mixed precision unscales
    /// its gradients and notices an overflow. `flag` holds one value, float32 or float64
    /// (or native float16; never packed, since every invocation that finds a bad value
    /// stores into it).
    pub fn unscale_check(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &Matrix<'_>,
        factor: f32,
        flag: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("x", x, Access::Walk)];
        let scalars = [("flag", flag, Access::Write)];
        let f = [[factor, 0.0, 0.0, 0.0], [0.0; 4]];
        self.run_flat2(encoder, "unscale_check", &ops, &scalars, f)
    }

    /// `dst = src`, converted to `dst`'s float type (float32, float16, float64 in any
    /// pair): PyTorch's `_to_copy` (autocast's casts) and `clone`.
    pub fn copy(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &Matrix<'_>,
        dst: &Matrix<'_>,
    ) -> Result<(), KernelError> {
        let ops = [("src", src, Access::Read), ("dst", dst, Access::Walk)];
        self.run_flat2(encoder, "copy", &ops, &[], NO_SCALARS)
    }

    /// `dst = sqrt(v) * scale + eps`: foreach Adam's denominator (`_foreach_sqrt`, divided
    /// by `sqrt(1 - beta2^t)`, so `scale` is its reciprocal, plus `eps`) as its own
    /// temporary. `scale` and `eps` reach float64 kernels to about 48 bits (two f32s each).
    pub fn adam_denom(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        v: &Matrix<'_>,
        dst: &Matrix<'_>,
        scale: f64,
        eps: f64,
    ) -> Result<(), KernelError> {
        let ops = [("v", v, Access::Read), ("dst", dst, Access::Walk)];
        let ((s, s_lo), (e, e_lo)) = (split2(scale), split2(eps));
        let f = [[s, e, s_lo, e_lo], [0.0; 4]];
        self.run_flat2(encoder, "adam_denom", &ops, &[], f)
    }

    /// Every element of `x` = `value` (PyTorch's `ones_like`, `full`). Exact in float64
    /// (the value reaches the shader as three f32s and a power of two). A float64 `x` is
    /// filled without `SHADER_F64` too, by copying its bytes (what `GradScaler` needs: its
    /// float64 scale exists under mixed precision on any device).
    pub fn fill(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        x: &Matrix<'_>,
        value: f64,
    ) -> Result<(), KernelError> {
        if x.dtype == DType::F64 && !self.supports_f64() {
            return fill_by_copy(self, encoder, x, &value.to_le_bytes());
        }
        let g = if x.dtype == DType::F64 {
            let ([hi, mid, lo], e) = split3(value);
            [hi, mid, lo, e as f32]
        } else {
            [value as f32, 0.0, 0.0, 0.0]
        };
        let f = [[0.0; 4], g];
        self.run_flat2(encoder, "fill", &[("x", x, Access::Walk)], &[], f)
    }

    fn run_flat2(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        entry: &'static str,
        operands: &[FlatOperand<'_, '_>],
        scalars: &[FlatOperand<'_, '_>],
        [f, g]: [[f32; 4]; 2],
    ) -> Result<(), KernelError> {
        let kernel = Flat {
            family: &ELEMENTWISE,
            entry,
        };
        let d = flat(
            self,
            &kernel,
            (&self.layouts.storage2.0, &self.layouts.storage2.1),
            operands,
            scalars,
            f,
            g,
        )?;
        record(self, encoder, &d);
        Ok(())
    }
}

/// At most this many bytes of a pattern are staged for [`fill_by_copy`].
const FILL_STAGING: u64 = 1 << 20;

/// Fills `x` with copies of one element's bytes `pattern`, copied from a buffer that holds
/// them (no shader: for float64 where no shader may hold one). Parts start on words, so a
/// part may start mid-element: each copy starts at its position's phase in the pattern.
fn fill_by_copy(
    k: &Kernels,
    encoder: &mut wgpu::CommandEncoder,
    x: &Matrix<'_>,
    pattern: &[u8],
) -> Result<(), KernelError> {
    check_parts("x", x)?;
    let e = pattern.len() as u64;
    if x.is_empty() {
        return Ok(());
    }
    // Room for the whole tensor (or FILL_STAGING bytes) after any phase.
    let size = x.bytes().min(FILL_STAGING).next_multiple_of(e) + e;
    let bytes: Vec<u8> = pattern
        .iter()
        .copied()
        .cycle()
        .take(size as usize)
        .collect();
    let staging = k
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("gpumem-kernels fill pattern"),
            contents: &bytes,
            usage: wgpu::BufferUsages::COPY_SRC,
        });
    k.count(crate::counters::Counter::StagingBuffer, 1);
    k.end_pass();
    let mut at = 0u64;
    for p in x.parts {
        let mut done = 0;
        while done < p.len {
            let phase = (at + done) % e;
            let n = (p.len - done).min(size - phase);
            encoder.copy_buffer_to_buffer(&staging, phase, p.buffer, p.offset + done, n);
            done += n;
        }
        at += p.len;
    }
    Ok(())
}

/// The uniforms of a kernel without scalar arguments.
const NO_SCALARS: [[f32; 4]; 2] = [[0.0; 4]; 2];

/// `x` as an f32 and the rest below its precision: `hi + lo` is `x` to about 48 bits, for
/// f64 kernels whose uniforms are f32s.
pub(crate) fn split2(x: f64) -> (f32, f32) {
    let hi = x as f32;
    (hi, (x - f64::from(hi)) as f32)
}

/// A finite `x` as `([hi, mid, lo], e)` with `x = (hi + mid + lo) · 2^e` exactly (53 bits
/// fit three f32s' 72 once scaled into f32's range); infinities and NaN as `hi`.
pub(crate) fn split3(x: f64) -> ([f32; 3], i32) {
    if !x.is_finite() || x == 0.0 {
        return ([x as f32, 0.0, 0.0], 0);
    }
    let e = x.abs().log2().floor() as i32;
    // 2^-e in two steps: one power of two of f64 cannot reach 2^1074.
    let h = -e / 2;
    let m = x * 2f64.powi(h) * 2f64.powi(-e - h);
    let hi = m as f32;
    let r = m - f64::from(hi);
    let mid = r as f32;
    let lo = (r - f64::from(mid)) as f32;
    ([hi, mid, lo], e)
}
