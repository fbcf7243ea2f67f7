//! A typed handle on an allocated block. Dropping the tensor frees the block — so keeping a
//! tensor alive (in a `Vec`, say) is how memory leaks in a training loop.

use crate::alloc::{BlockAddr, Placement};
use crate::device::{Backing, Device};
use crate::error::Error;
use std::fmt;

/// Element types the engine stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    F16,
    F32,
    F64,
    U32,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> u64 {
        match self {
            DType::F16 => 2,
            DType::F32 | DType::U32 => 4,
            DType::F64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::U32 => "uint32",
        })
    }
}

/// Bytes of a `rows × cols` matrix of `dtype`, or an error naming `label` on overflow.
pub fn matrix_bytes(rows: u64, cols: u64, dtype: DType, label: &str) -> Result<u64, Error> {
    rows.checked_mul(cols)
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| {
            Error::Setup(format!(
                "{label}: {rows} × {cols} {dtype} values do not fit in 64 bits of bytes"
            ))
        })
}

/// A row-major matrix in device memory.
pub struct Tensor {
    device: Device,
    block: BlockAddr,
    rows: u64,
    cols: u64,
    dtype: DType,
    label: String,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor({} {}×{} {} at {:#x})",
            self.label, self.rows, self.cols, self.dtype, self.block.0
        )
    }
}

impl Tensor {
    /// Allocates an uninitialised `rows × cols` tensor through the device's allocator.
    pub fn new(
        device: &Device,
        rows: u64,
        cols: u64,
        dtype: DType,
        label: &str,
    ) -> Result<Tensor, Error> {
        if rows == 0 || cols == 0 {
            return Err(Error::Shape(format!(
                "{label}: a tensor needs at least one row and one column, got {rows} × {cols}"
            )));
        }
        let bytes = matrix_bytes(rows, cols, dtype, label)?;
        let block = device.malloc(bytes, label)?;
        Ok(Tensor {
            device: device.clone(),
            block,
            rows,
            cols,
            dtype,
            label: label.to_string(),
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

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Bytes of data (the block may be larger: see [`Tensor::placement`]).
    pub fn bytes(&self) -> u64 {
        self.len() * self.dtype.size()
    }

    /// The block's address in the allocator's address space.
    pub fn addr(&self) -> u64 {
        self.block.0
    }

    /// Where the tensor's block lives.
    pub fn placement(&self) -> Placement {
        self.device
            .borrow()
            .alloc
            .placement(self.block)
            .expect("a live tensor's block is allocated")
    }

    fn check_elem<T>(&self, n: usize) -> Result<(), Error> {
        if size_of::<T>() as u64 != self.dtype.size() {
            return Err(Error::Shape(format!(
                "{}: {}-byte elements do not match {}",
                self.label,
                size_of::<T>(),
                self.dtype
            )));
        }
        if n as u64 != self.len() {
            return Err(Error::Shape(format!(
                "{}: {n} values for a {}×{} tensor",
                self.label, self.rows, self.cols
            )));
        }
        Ok(())
    }

    /// Copies `data` (exactly `len()` values) into the tensor.
    pub fn write<T: bytemuck::Pod>(&self, data: &[T]) -> Result<(), Error> {
        self.check_elem::<T>(data.len())?;
        let p = self.placement();
        let inner = self.device.borrow();
        match inner.alloc.store() {
            Backing::Plan => Ok(()),
            Backing::Cpu(store) => {
                let dst = store
                    .ptr::<T>(p.segment, p.offset, data.len())
                    .ok_or_else(|| Error::Device("tensor outside its segment".into()))?;
                // SAFETY: `dst` points at this tensor's own block, which no other live
                // tensor overlaps, and `data` cannot alias device memory.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
                Ok(())
            }
            Backing::Wgpu(store) => {
                crate::exec::write(store, p.segment, p.offset, bytemuck::cast_slice(data))
            }
        }
    }

    /// Reads the tensor back. `plan` tensors hold no data, which is an error.
    pub fn read<T: bytemuck::Pod>(&self) -> Result<Vec<T>, Error> {
        self.check_elem::<T>(self.len() as usize)?;
        let p = self.placement();
        let n = self.len() as usize;
        let inner = self.device.borrow();
        match inner.alloc.store() {
            Backing::Plan => Err(Error::Plan(format!(
                "{}: the plan backing holds no data (steps are planned, not executed)",
                self.label
            ))),
            Backing::Cpu(store) => {
                let src = store
                    .ptr::<T>(p.segment, p.offset, n)
                    .ok_or_else(|| Error::Device("tensor outside its segment".into()))?;
                // SAFETY: `src` points at `n` initialised values of this tensor's block.
                Ok(unsafe { std::slice::from_raw_parts(src, n) }.to_vec())
            }
            Backing::Wgpu(store) => {
                crate::exec::read_back(store, p.segment, p.offset, self.bytes())
            }
        }
    }
}

impl Tensor {
    /// Writes `data` converted to the tensor's floating-point type (float16, 32 or 64).
    pub fn write_f32(&self, data: &[f32]) -> Result<(), Error> {
        match self.dtype {
            DType::F32 => self.write(data),
            DType::F64 => self.write(&data.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>()),
            DType::F16 => self.write(
                &data
                    .iter()
                    .map(|&v| half::f16::from_f32(v))
                    .collect::<Vec<_>>(),
            ),
            DType::U32 => Err(Error::Shape(format!(
                "{}: uint32 tensors hold labels, not values",
                self.label
            ))),
        }
    }

    /// Reads the tensor's values as float64, whatever its floating-point type.
    pub fn read_f64(&self) -> Result<Vec<f64>, Error> {
        Ok(match self.dtype {
            DType::F32 => self.read::<f32>()?.into_iter().map(f64::from).collect(),
            DType::F64 => self.read::<f64>()?,
            DType::F16 => self
                .read::<half::f16>()?
                .into_iter()
                .map(|v| v.to_f64())
                .collect(),
            DType::U32 => self.read::<u32>()?.into_iter().map(f64::from).collect(),
        })
    }
}

// ANCHOR: drop
impl Drop for Tensor {
    fn drop(&mut self) {
        self.device.free(self.block);
    }
}
// ANCHOR_END: drop
