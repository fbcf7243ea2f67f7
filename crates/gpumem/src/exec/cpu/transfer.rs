//! Data in and out of host segments: plain copies between the caller's values and the
//! tensor's bytes.

use super::super::Memory;
use super::super::op::Operand;
use super::host;
use crate::error::Error;

/// `n` values of `T` at `t`'s first byte, checked to lie inside its segment and be aligned.
fn values<T>(mem: &Memory, t: &Operand, n: usize) -> Result<*mut T, Error> {
    let outside = || Error::Device("tensor outside its segment".into());
    let p = mem.placement(t.block).ok_or_else(outside)?;
    host(mem)?
        .ptr::<T>(p.segment, p.offset + t.offset, n)
        .ok_or_else(outside)
}

/// Copies `data` into `t`'s bytes.
pub(crate) fn write<T: bytemuck::Pod>(mem: &Memory, t: &Operand, data: &[T]) -> Result<(), Error> {
    let dst = values::<T>(mem, t, data.len())?;
    // SAFETY: `dst` points at `t`'s own block, which no other live tensor overlaps, and
    // `data` cannot alias device memory.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(())
}

/// A copy of `t`'s values.
pub(crate) fn read<T: bytemuck::Pod>(mem: &Memory, t: &Operand) -> Result<Vec<T>, Error> {
    let n = t.len() as usize;
    let src = values::<T>(mem, t, n)?;
    // SAFETY: `src` points at `n` initialised values of `t`'s block.
    Ok(unsafe { std::slice::from_raw_parts(src, n) }.to_vec())
}
