//! A typed handle on an allocated block, as PyTorch has them: a tensor is a view (rows, an
//! offset) of a reference-counted storage, and the storage's block is freed when the last
//! tensor on it is dropped — so keeping a tensor alive (in a `Vec`, or saved for a backward
//! pass) is what keeps memory allocated, and how memory leaks in a training loop.

use crate::alloc::{BlockAddr, Placement};
use crate::device::Device;
pub use crate::dtype::DType;
use crate::error::Error;
use crate::exec::op::Operand;
use crate::role::Role;
use std::fmt;
use std::rc::Rc;

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

/// An allocated block; freed when the last tensor on it is dropped.
struct Storage {
    device: Device,
    block: BlockAddr,
}

/// A row-major matrix in device memory. Cloning a tensor shares its storage (like a second
/// Python name for one `torch.Tensor`); [`Tensor::rows_view`] makes a view of some rows.
#[derive(Clone)]
pub struct Tensor {
    storage: Rc<Storage>,
    /// Bytes from the start of the storage's block.
    offset: u64,
    rows: u64,
    cols: u64,
    dtype: DType,
    /// What the tensor is for (a view has the role it is given).
    role: Role,
    /// Shared, so that an operation's operands name it without copying it.
    label: Rc<str>,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor({} {}×{} {} at {:#x})",
            self.label,
            self.rows,
            self.cols,
            self.dtype,
            self.addr()
        )
    }
}

impl Tensor {
    /// Allocates an uninitialised `rows × cols` tensor for `role` through the device's
    /// allocator; `label` names it for people (traces, snapshots, errors).
    pub fn new(
        device: &Device,
        rows: u64,
        cols: u64,
        dtype: DType,
        role: Role,
        label: &str,
    ) -> Result<Tensor, Error> {
        if rows == 0 || cols == 0 {
            return Err(Error::Shape(format!(
                "{label}: a tensor needs at least one row and one column, got {rows} × {cols}"
            )));
        }
        let bytes = matrix_bytes(rows, cols, dtype, label)?;
        let block = device.malloc(bytes, role, label)?;
        Ok(Tensor {
            storage: Rc::new(Storage {
                device: device.clone(),
                block,
            }),
            offset: 0,
            rows,
            cols,
            dtype,
            role,
            label: label.into(),
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

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn device(&self) -> &Device {
        &self.storage.device
    }

    /// Rows `start..start + len` of this tensor, sharing its storage (PyTorch's `x[a:b]`):
    /// no memory is allocated, and the storage stays allocated while the view lives.
    pub fn rows_view(&self, start: u64, len: u64) -> Result<Tensor, Error> {
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.rows && len > 0);
        let Some(end) = end else {
            return Err(Error::Shape(format!(
                "{}: rows {start}..{} of a {}-row tensor",
                self.label,
                start.saturating_add(len),
                self.rows
            )));
        };
        Ok(Tensor {
            storage: self.storage.clone(),
            offset: self.offset + start * self.cols * self.dtype.size(),
            rows: len,
            cols: self.cols,
            dtype: self.dtype,
            role: self.role,
            label: format!("{}[{start}:{end}]", self.label).into(),
        })
    }

    /// `rows × cols` values from value `start` of this tensor on, sharing its storage (a
    /// view of a flat buffer, as DDP's `gradient_as_bucket_view` makes `.grad` a view of its
    /// bucket): no memory is allocated.
    pub(crate) fn flat_view(
        &self,
        start: u64,
        rows: u64,
        cols: u64,
        role: Role,
        label: &str,
    ) -> Result<Tensor, Error> {
        let end = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_add(start))
            .filter(|&e| e <= self.len() && rows > 0 && cols > 0);
        if end.is_none() {
            return Err(Error::Shape(format!(
                "{label}: {rows} × {cols} values from value {start} of {}, which has {}",
                self.label,
                self.len()
            )));
        }
        Ok(Tensor {
            storage: self.storage.clone(),
            offset: self.offset + start * self.dtype.size(),
            rows,
            cols,
            dtype: self.dtype,
            role,
            label: label.into(),
        })
    }

    /// Whether both tensors are views of one storage (one allocation).
    pub fn same_storage(&self, other: &Tensor) -> bool {
        Rc::ptr_eq(&self.storage, &other.storage)
    }

    /// Bytes of data (the block may be larger: see [`Tensor::placement`]).
    pub fn bytes(&self) -> u64 {
        self.len() * self.dtype.size()
    }

    /// The address of the tensor's first value in the allocator's address space.
    pub fn addr(&self) -> u64 {
        self.storage.block.0 + self.offset
    }

    /// Where the tensor's values live: its storage's block from the view's first row on.
    pub fn placement(&self) -> Placement {
        let mut p = self
            .device()
            .borrow()
            .alloc
            .placement(self.storage.block)
            .expect("a live tensor's block is allocated");
        p.offset += self.offset;
        p.size -= self.offset;
        p
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
        self.device().write(&self.operand(), data)
    }

    /// Reads the tensor back. `plan` tensors hold no data, which is an error.
    pub fn read<T: bytemuck::Pod>(&self) -> Result<Vec<T>, Error> {
        self.check_elem::<T>(self.len() as usize)?;
        self.device().read(&self.operand())
    }

    /// What the executor needs of the tensor: which block, which bytes of it, what they
    /// hold.
    pub(crate) fn operand(&self) -> Operand {
        Operand {
            block: self.storage.block,
            offset: self.offset,
            rows: self.rows,
            cols: self.cols,
            dtype: self.dtype,
            label: Rc::clone(&self.label),
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
            DType::U32 | DType::I64 => Err(Error::Shape(format!(
                "{}: {} tensors hold labels, not values",
                self.label, self.dtype
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
            DType::I64 => self.read::<i64>()?.into_iter().map(|v| v as f64).collect(),
        })
    }
}

// ANCHOR: drop
impl Drop for Storage {
    fn drop(&mut self) {
        self.device.free(self.block);
    }
}
// ANCHOR_END: drop
