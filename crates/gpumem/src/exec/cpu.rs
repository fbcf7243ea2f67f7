//! The `cpu` backing's kernels: plain Rust over host segments, the numerical reference for
//! the WGSL shaders. Matmul is `matrixmultiply` (sgemm/dgemm), whose strides make
//! transposes free. Large tensors are cut into a few pieces per core (`par`), each value
//! computed by one thread in the order one thread alone would use.
//!
//! Each operation computes in float64 if any of its tensors is stored as float64 and in
//! float32 otherwise. Tensors stored in another type (float16 activations under mixed
//! precision) are converted on the way in and out, as a GPU kernel would in its registers.
//! Shapes were checked by `ops`; here only the memory is resolved.

use super::Memory;
use super::compute::Compute;
use super::op::Operand;
use super::spec::AdamStep;
use crate::dtype::DType;
use crate::error::Error;
use crate::segments::HostStore;
use half::f16;
use std::borrow::Cow;

/// An operand resolved to host memory for one run of an operation: the memory is borrowed
/// for that run, so the pointer stays valid while the view is used.
pub(super) struct HostView {
    ptr: *mut u8,
    rows: u64,
    cols: u64,
    dtype: DType,
    label: std::rc::Rc<str>,
}

/// The host memory of a `cpu` device.
fn host(mem: &Memory) -> Result<&HostStore, Error> {
    mem.store()
        .host()
        .ok_or_else(|| Error::Device("not a cpu device".into()))
}

impl HostView {
    fn resolve(mem: &Memory, store: &HostStore, t: &Operand) -> Result<HostView, Error> {
        let lost = || Error::Device(format!("{}: block outside its segment", t.label));
        let p = mem.placement(t.block).ok_or_else(lost)?;
        let ptr = store
            .ptr::<u8>(p.segment, p.offset + t.offset, t.bytes() as usize)
            .ok_or_else(lost)?;
        Ok(HostView {
            ptr,
            rows: t.rows,
            cols: t.cols,
            dtype: t.dtype,
            label: t.label.clone(),
        })
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn cols(&self) -> u64 {
        self.cols
    }

    pub fn len(&self) -> u64 {
        self.rows * self.cols
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn bytes(&self) -> u64 {
        self.len() * self.dtype.size()
    }
}

/// A pointer to `t`'s values as `T` (the view's bytes were checked to lie in its segment).
fn ptr<T>(t: &HostView) -> *mut T {
    t.ptr.cast()
}

/// A view of `t`'s values in host memory.
pub(super) fn raw<T>(t: &HostView) -> Result<&[T], Error> {
    let p = ptr::<T>(t);
    // SAFETY: a tensor's values live in its own allocator block, and live blocks never
    // overlap (the allocator's invariant, property-tested); the only mutable views are an
    // operation's output, made by `with_mut` while no view of that output exists.
    Ok(unsafe { std::slice::from_raw_parts(p, t.len() as usize) })
}

/// Where `t`'s values live in host memory, for writing. Only a pointer: turning it into a
/// `&mut` slice is the caller's `unsafe` step, under [`with_mut`]'s contract — no other view
/// of `t`'s values (from [`raw`], another write, [`Tensor::read`] or [`Tensor::write`]) may
/// exist while it lives, and `t` must stay alive. Views of other tensors are fine: live
/// blocks never overlap.
fn raw_mut<T>(t: &HostView) -> Result<*mut [T], Error> {
    let p = ptr::<T>(t);
    Ok(std::ptr::slice_from_raw_parts_mut(p, t.len() as usize))
}

/// A tensor's values in the compute type: borrowed when stored as `C`, converted otherwise.
pub(super) fn load<C: Compute>(t: &HostView) -> Result<Cow<'_, [C]>, Error> {
    Ok(match t.dtype() {
        d if d == C::DTYPE => Cow::Borrowed(raw::<C>(t)?),
        DType::F16 => Cow::Owned(raw::<f16>(t)?.iter().map(|&v| C::from_f16(v)).collect()),
        DType::F32 => Cow::Owned(raw::<f32>(t)?.iter().map(|&v| C::from_f32(v)).collect()),
        DType::F64 => Cow::Owned(
            raw::<f64>(t)?
                .iter()
                .map(|&v| C::from(v).unwrap_or(C::nan()))
                .collect(),
        ),
        DType::U32 | DType::I64 => {
            return Err(Error::Shape(format!(
                "{}: labels are not numbers to compute with",
                t.label()
            )));
        }
    })
}

/// Runs `f` on a mutable view of `t` in the compute type: directly when stored as `C`,
/// else on a converted copy that is written back. `t` must be the running operation's
/// output, and the caller must hold no view of it.
pub(super) fn with_mut<C: Compute, R>(
    t: &HostView,
    f: impl FnOnce(&mut [C]) -> R,
) -> Result<R, Error> {
    if t.dtype() == C::DTYPE {
        let p = raw_mut::<C>(t)?;
        // SAFETY: `p` covers `t`'s own block, and `t` outlives this call. `t` is an
        // operation's output, which `ops` refuses to be also one of its inputs, and every
        // kernel calls `with_mut` holding views of its inputs only: this is the one view of
        // `t` while `f` runs.
        return Ok(f(unsafe { &mut *p }));
    }
    let mut values = load::<C>(t)?.into_owned();
    let r = f(&mut values);
    match t.dtype() {
        DType::F16 => store(t, &values, |v| v.to_f16())?,
        DType::F32 => store(t, &values, |v| Compute::to_f32(v))?,
        DType::F64 => store(t, &values, |v| v.to_f64().unwrap_or(f64::NAN))?,
        DType::U32 | DType::I64 => {
            return Err(Error::Shape(format!(
                "{}: labels are not numbers to compute with",
                t.label()
            )));
        }
    }
    Ok(r)
}

/// Writes `values` into `t`, each converted to its storage type by `convert`.
fn store<C: Copy, T>(t: &HostView, values: &[C], convert: impl Fn(C) -> T) -> Result<(), Error> {
    let p = raw_mut::<T>(t)?;
    // SAFETY: as in `with_mut`, its only caller: `t` is the operation's output, alive, and
    // `f`'s view of it has ended, so this is the one view of `t`.
    let out = unsafe { &mut *p };
    out.iter_mut()
        .zip(values)
        .for_each(|(d, v)| *d = convert(*v));
    Ok(())
}

mod matmul;
pub(crate) mod par;
mod run;
mod step;
mod transfer;
pub use matmul::matmul;
pub(crate) use run::run;
pub use step::*;
pub(crate) use transfer::{read, write};

/// Calls `$f::<f64>` if any tensor is float64, else `$f::<f32>`.
macro_rules! dispatch {
    ($f:ident, [$($t:expr),+], $($arg:expr),*) => {
        if [$($t),+].iter().any(|t: &&HostView| t.dtype() == $crate::dtype::DType::F64) {
            $f::<f64>($($arg),*)
        } else {
            $f::<f32>($($arg),*)
        }
    };
}
pub(super) use dispatch;

pub fn relu(src: &HostView, dst: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(src: &HostView, dst: &HostView) -> Result<(), Error> {
        let s = load::<C>(src)?;
        with_mut::<C, _>(dst, |d| {
            par::elementwise(d, |at, d| {
                d.iter_mut()
                    .zip(&s[at..])
                    .for_each(|(d, &s)| *d = s.max(C::zero()))
            })
        })
    }
    dispatch!(run, [src, dst], src, dst)
}

pub fn colsum(src: &HostView, dst: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(src: &HostView, dst: &HostView) -> Result<(), Error> {
        let n = src.cols() as usize;
        let s = load::<C>(src)?;
        // Accumulate in f64 so a million-row sum does not drift. One core: cutting the
        // columns among cores measured slower (each core then streams every row in part).
        let mut acc = vec![0f64; n];
        let f = |v: &C| v.to_f64().unwrap_or(f64::NAN);
        // Four rows per pass over `acc`, added in row order: the sums of one row at a time.
        let mut rows = s.chunks_exact(4 * n);
        for four in &mut rows {
            let (r0, rest) = four.split_at(n);
            let (r1, rest) = rest.split_at(n);
            let (r2, r3) = rest.split_at(n);
            for (j, a) in acc.iter_mut().enumerate() {
                *a = *a + f(&r0[j]) + f(&r1[j]) + f(&r2[j]) + f(&r3[j]);
            }
        }
        for row in rows.remainder().chunks_exact(n) {
            acc.iter_mut().zip(row).for_each(|(a, v)| *a += f(v));
        }
        with_mut::<C, _>(dst, |d| {
            for (d, a) in d.iter_mut().zip(acc) {
                let a = C::from(a).unwrap_or(C::nan());
                *d = a;
            }
        })
    }
    dispatch!(run, [src, dst], src, dst)
}

pub fn sgd(param: &HostView, grad: &HostView, lr: f32) -> Result<(), Error> {
    fn run<C: Compute>(param: &HostView, grad: &HostView, lr: f32) -> Result<(), Error> {
        let (g, lr) = (load::<C>(grad)?, C::from_f32(lr));
        with_mut::<C, _>(param, |p| {
            par::elementwise(p, |at, p| {
                p.iter_mut().zip(&g[at..]).for_each(|(p, &g)| *p -= lr * g)
            })
        })
    }
    dispatch!(run, [param, grad], param, grad, lr)
}

pub fn adam(
    param: &HostView,
    grad: &HostView,
    m: &HostView,
    v: &HostView,
    hp: AdamStep,
) -> Result<(), Error> {
    fn run<C: Compute>(
        param: &HostView,
        grad: &HostView,
        m: &HostView,
        v: &HostView,
        hp: AdamStep,
    ) -> Result<(), Error> {
        let g = load::<C>(grad)?;
        let (b1, b2) = (C::from_f32(hp.beta1), C::from_f32(hp.beta2));
        let (lr, eps) = (C::from_f32(hp.lr), C::from_f32(hp.eps));
        let bc1 = C::one() - b1.powi(hp.step as i32);
        let bc2 = C::one() - b2.powi(hp.step as i32);
        let one = C::one();
        // One pass over the four tensors: the same arithmetic, value by value, as updating
        // `m`, then `v`, then the parameter.
        with_mut::<C, _>(m, |m| {
            with_mut::<C, _>(v, |v| {
                with_mut::<C, _>(param, |p| {
                    par::elementwise3(p, m, v, |at, p, m, v| {
                        for (((p, m), v), &g) in p.iter_mut().zip(m).zip(v).zip(&g[at..]) {
                            *m = b1 * *m + (one - b1) * g;
                            *v = b2 * *v + (one - b2) * g * g;
                            *p -= lr * (*m / bc1) / ((*v / bc2).sqrt() + eps);
                        }
                    })
                })
            })
        })???;
        Ok(())
    }
    dispatch!(run, [param, grad, m, v], param, grad, m, v, hp)
}

/// `x *= factor`, and `flag[0] = 1` if any result is not finite (for loss scaling).
pub fn unscale_check(x: &HostView, factor: f32, flag: &HostView) -> Result<(), Error> {
    fn run<C: Compute>(x: &HostView, factor: f32, flag: &HostView) -> Result<(), Error> {
        let f = C::from_f32(factor);
        let bad = with_mut::<C, _>(x, |x| {
            x.iter_mut().fold(false, |bad, v| {
                *v *= f;
                bad || !v.is_finite()
            })
        })?;
        if bad {
            with_mut::<C, _>(flag, |fl| fl[0] = C::one())?;
        }
        Ok(())
    }
    dispatch!(run, [x, flag], x, factor, flag)
}

pub fn zero(x: &HostView) -> Result<(), Error> {
    let p = ptr::<u8>(x);
    // SAFETY: the tensor's own bytes, as above.
    unsafe { std::ptr::write_bytes(p, 0, x.bytes() as usize) };
    Ok(())
}
