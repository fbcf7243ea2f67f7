//! Views of tensors that already live in the engine's buffers.
//!
//! The caching allocator places a tensor at some byte offset inside a segment, and a
//! segment larger than `max_buffer_size` is several wgpu buffers. So a tensor is an
//! ordered list of [`Part`]s; kernels never allocate tensors, they bind pieces of parts.

/// Element type of a [`Matrix`].
///
/// float16 is storage only (values are computed in f32 and rounded when stored); it is
/// native `f16` where the device has `SHADER_F16` and packed two per `u32` elsewhere.
/// float64 needs `SHADER_F64` (kernels compute in f64 when any operand is float64);
/// without it kernels return [`crate::KernelError::Unsupported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    F32,
    F16,
    F64,
    /// Class labels for [`crate::Kernels::softmax_xent`] (and the `nll_loss` kernels).
    U32,
    /// Class labels as PyTorch's `cross_entropy` takes them, for the `nll_loss` kernels:
    /// shaders read the low `u32` word of each (little-endian), and a label whose high word
    /// is not zero counts as out of range.
    I64,
}

impl DType {
    pub fn size(self) -> u64 {
        match self {
            DType::F16 => 2,
            DType::F32 | DType::U32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }

    /// Whether values of this type are floats (operands of the float kernels), not labels.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }
}

/// One contiguous run of bytes inside one wgpu buffer: `offset` and `len` are multiples of
/// 4, except that the last part of a float16 matrix may end on a half word (its buffer must
/// then hold the rest of that word: kernels read and rewrite whole words, keeping the
/// other half's bits).
#[derive(Clone, Copy, Debug)]
pub struct Part<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub len: u64,
}

/// A row-major matrix stored across one or more parts, in order
/// (`rows * cols * dtype.size() == sum of part lens`).
/// Vectors are matrices too: a bias is `1 × n`, labels are `n × 1`.
#[derive(Clone, Copy, Debug)]
pub struct Matrix<'a> {
    pub parts: &'a [Part<'a>],
    pub rows: u64,
    pub cols: u64,
    pub dtype: DType,
}

impl<'a> Matrix<'a> {
    /// An f32 matrix.
    pub fn new(parts: &'a [Part<'a>], rows: u64, cols: u64) -> Self {
        Matrix {
            parts,
            rows,
            cols,
            dtype: DType::F32,
        }
    }

    /// A matrix of `dtype`.
    pub fn with_dtype(parts: &'a [Part<'a>], rows: u64, cols: u64, dtype: DType) -> Self {
        Matrix {
            parts,
            rows,
            cols,
            dtype,
        }
    }

    /// An f32 row vector (`1 × n`), e.g. a bias.
    pub fn row_vector(parts: &'a [Part<'a>], n: u64) -> Self {
        Self::new(parts, 1, n)
    }

    /// A u32 column vector (`n × 1`), e.g. class labels.
    pub fn labels(parts: &'a [Part<'a>], n: u64) -> Self {
        Matrix {
            parts,
            rows: n,
            cols: 1,
            dtype: DType::U32,
        }
    }

    /// An int64 column vector (`n × 1`): class labels as PyTorch keeps them, `8 n` bytes.
    pub fn labels_i64(parts: &'a [Part<'a>], n: u64) -> Self {
        Matrix {
            parts,
            rows: n,
            cols: 1,
            dtype: DType::I64,
        }
    }

    pub fn len(&self) -> u64 {
        self.rows * self.cols
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> u64 {
        self.len() * self.dtype.size()
    }

    /// The same bytes seen as `len × 1`, so elementwise kernels can cut anywhere.
    pub(crate) fn flat(&self) -> Self {
        Matrix {
            rows: self.len(),
            cols: 1,
            ..*self
        }
    }
}
