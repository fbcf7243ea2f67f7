//! Cutting an operand into pieces that can be bound.
//!
//! A binding must start at a multiple of `min_storage_buffer_offset_alignment`, be at most
//! `max_storage_buffer_binding_size` long and lie inside one buffer. So each operand's rows
//! are cut into spans that fit (the binding starts at the row's offset aligned *down*, and
//! the shader gets the remaining element offset in its uniform). A row that straddles two
//! parts (or cannot fit behind the aligned-down start) becomes a one-row span that is
//! gathered into a scratch buffer with `copy_buffer_to_buffer`, and scattered back when the
//! kernel writes it. Operands that share a dimension (e.g. C and A's rows in `C = A·B`) are
//! cut at the union of their span boundaries, so every dispatch sees whole spans.
//!
//! Element sizes: float16 rows may start and end on half words. Bindings and copies move
//! whole 4-byte words, so a binding is rounded up to the next word (inside the buffer:
//! [`check_parts`] demands it) and a gathered row takes the words around it, its first
//! element `lead` halves in; kernels never change the halves that are not theirs, so the
//! copy-out writes back what the copy-in read. float64 rows whose bytes are not 8-aligned
//! in their buffer (never from the engine's allocator, whose blocks are 512-aligned) are
//! gathered row by row, since a binding cannot start mid-element.

use std::collections::BTreeSet;

use crate::error::KernelError;
use crate::limits::KernelLimits;
use crate::view::Matrix;

/// A byte range of one buffer, copied to or from a scratch buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub len: u64,
}

/// How one operand is bound for one dispatch.
#[derive(Clone, Debug)]
pub(crate) enum Bind<'a> {
    /// `buffer[offset .. offset + size]`; the operand's first element is `elem` elements in.
    Direct {
        buffer: &'a wgpu::Buffer,
        offset: u64,
        size: u64,
        elem: u64,
        /// `size` is whole quads (4 elements) and `offset` a multiple of one, so the
        /// binding may be declared as an array of vec4s.
        quads: bool,
    },
    /// Gathered from `chunks` into scratch; the operand's first element is `lead`
    /// elements in (non-zero only for a float16 row starting on a half word).
    Gather {
        chunks: Vec<Chunk<'a>>,
        size: u64,
        lead: u64,
    },
}

impl Bind<'_> {
    /// Whether the binding may be declared as an array of quads (gathered rows always may:
    /// scratch buffers are rounded up).
    pub fn quads(&self) -> bool {
        match self {
            Bind::Direct { quads, .. } => *quads,
            Bind::Gather { .. } => true,
        }
    }

    /// Element offset of the operand's first element inside the binding.
    pub fn elem(&self) -> u64 {
        match self {
            Bind::Direct { elem, .. } => *elem,
            Bind::Gather { lead, .. } => *lead,
        }
    }
}

#[derive(Clone, Debug)]
enum SpanKind<'a> {
    /// Rows start `byte` bytes into part `part`.
    Direct {
        part: usize,
        byte: u64,
    },
    Gather(Vec<Chunk<'a>>, u64),
}

#[derive(Clone, Debug)]
struct Span<'a> {
    start: u64,
    end: u64,
    kind: SpanKind<'a>,
}

/// An operand (a matrix cut by rows) with its bindable spans.
pub(crate) struct Operand<'a> {
    pub m: Matrix<'a>,
    pub row_bytes: u64,
    spans: Vec<Span<'a>>,
    align: u64,
    elem: u64,
}

impl<'a> Operand<'a> {
    /// Plans the spans of `m`. Spans that are not the last are cut to a multiple of
    /// `row_multiple` rows where possible, so vectorised kernels see aligned pieces.
    pub fn new(
        name: &str,
        m: &Matrix<'a>,
        lim: &KernelLimits,
        row_multiple: u64,
    ) -> Result<Self, KernelError> {
        check_parts(name, m)?;
        let elem = m.dtype.size();
        let row_bytes = m.cols * elem;
        if m.rows > 0 && row_bytes > lim.max_binding {
            return Err(KernelError::RowTooLarge {
                name: name.to_string(),
                row_bytes,
                max_binding: lim.max_binding,
            });
        }
        // Binding offsets are multiples of the device's alignment and of a quad of elements
        // (so the element offset inside the binding is whole and vec4 arrays are aligned);
        // both are powers of two.
        let align = lim.offset_align.max(4 * elem);
        let mut spans = Vec::new();
        let (mut r, mut part, mut part_start) = (0u64, 0usize, 0u64);
        while r < m.rows && row_bytes > 0 {
            let start = r * row_bytes;
            while start >= part_start + m.parts[part].len {
                part_start += m.parts[part].len;
                part += 1;
            }
            let p = &m.parts[part];
            let within = start - part_start;
            let fit_part = (p.len - within) / row_bytes;
            let at = p.offset + within;
            let aligned = at - at % align;
            let fit_binding = (aligned + lim.max_binding).saturating_sub(at) / row_bytes;
            let mut n = fit_part.min(fit_binding).min(m.rows - r);
            if n == 0 || !at.is_multiple_of(elem) {
                let (chunks, lead) = gather_chunks(m, part, part_start, start, row_bytes);
                spans.push(Span {
                    start: r,
                    end: r + 1,
                    kind: SpanKind::Gather(chunks, lead),
                });
                r += 1;
                continue;
            }
            if n < m.rows - r && n > row_multiple {
                n -= n % row_multiple;
            }
            spans.push(Span {
                start: r,
                end: r + n,
                kind: SpanKind::Direct { part, byte: within },
            });
            r += n;
        }
        Ok(Operand {
            m: *m,
            row_bytes,
            spans,
            align,
            elem,
        })
    }

    /// Row boundaries where this operand must be cut.
    fn boundaries(&self, into: &mut BTreeSet<u64>) {
        for s in &self.spans {
            into.insert(s.start);
            into.insert(s.end);
        }
    }

    /// The binding of rows `[s, e)`, which must lie inside one span.
    pub fn bind(&self, s: u64, e: u64) -> Bind<'a> {
        let i = self.spans.partition_point(|sp| sp.end <= s);
        let sp = &self.spans[i];
        debug_assert!(sp.start <= s && e <= sp.end, "segment crosses a span");
        match &sp.kind {
            SpanKind::Gather(chunks, lead) => Bind::Gather {
                chunks: chunks.clone(),
                // Whole quads of the largest element: scratch buffers have room.
                size: chunks
                    .iter()
                    .map(|c| c.len)
                    .sum::<u64>()
                    .next_multiple_of(32)
                    .max(32),
                lead: *lead,
            },
            SpanKind::Direct { part, byte } => {
                let p = &self.m.parts[*part];
                let at = p.offset + byte + (s - sp.start) * self.row_bytes;
                let offset = at - at % self.align;
                let end = at + (e - s) * self.row_bytes;
                // Whole quads where the buffer has them (the limits keep max_binding a
                // multiple of 32), else whole words: a float16 binding may end on the
                // first half of one, whose other half the buffer must hold.
                let quads = (end - offset)
                    .max(self.elem)
                    .next_multiple_of(4 * self.elem);
                let fits = offset + quads <= p.buffer.size();
                Bind::Direct {
                    buffer: p.buffer,
                    offset,
                    size: if fits {
                        quads
                    } else {
                        (end - offset).max(self.elem).next_multiple_of(4)
                    },
                    elem: (at - offset) / self.elem,
                    quads: fits,
                }
            }
        }
    }
}

/// Cuts `[0, rows)` at every span boundary of every operand (all share that dimension).
pub(crate) fn segments(rows: u64, operands: &[&Operand<'_>]) -> Vec<(u64, u64)> {
    let mut cuts = BTreeSet::new();
    cuts.insert(0);
    cuts.insert(rows);
    for op in operands {
        op.boundaries(&mut cuts);
    }
    let cuts: Vec<u64> = cuts.into_iter().filter(|&c| c <= rows).collect();
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// The chunks holding the row of `row_bytes` at byte `start` of `m`, widened to whole
/// words, and the number of elements before the row's first in them.
fn gather_chunks<'a>(
    m: &Matrix<'a>,
    mut part: usize,
    mut part_start: u64,
    start: u64,
    row_bytes: u64,
) -> (Vec<Chunk<'a>>, u64) {
    let mut chunks = Vec::new();
    let (mut at, end) = (start, start + row_bytes);
    while at < end {
        let p = &m.parts[part];
        let within = at - part_start;
        let len = (p.len - within).min(end - at);
        if len > 0 {
            chunks.push(Chunk {
                buffer: p.buffer,
                offset: p.offset + within,
                len,
            });
        }
        at += len;
        part_start += p.len;
        part += 1;
    }
    // Parts start on words, so only the row's own ends can be half words (float16).
    let mut lead = 0;
    if let Some(first) = chunks.first_mut() {
        let back = first.offset % 4;
        first.offset -= back;
        first.len += back;
        lead = back / m.dtype.size();
    }
    if let Some(last) = chunks.last_mut() {
        last.len = last.len.next_multiple_of(4);
    }
    (chunks, lead)
}

pub(crate) fn check_parts(name: &str, m: &Matrix<'_>) -> Result<(), KernelError> {
    let bad = |reason: String| KernelError::Parts {
        name: name.to_string(),
        reason,
    };
    let mut total = 0u64;
    let last = m.parts.len().saturating_sub(1);
    for (i, p) in m.parts.iter().enumerate() {
        // Only the end of a float16 matrix may fall on a half word.
        let half_tail = i == last && m.dtype.size() == 2 && p.len % 2 == 0;
        if p.offset % 4 != 0 || (p.len % 4 != 0 && !half_tail) {
            return Err(bad(format!(
                "part {i}: offset {} and len {} must be multiples of 4{}",
                p.offset,
                p.len,
                if m.dtype.size() == 2 {
                    " (a float16 matrix's last part may end on a half word)"
                } else {
                    ""
                }
            )));
        }
        // Kernels read and write whole words, so the word holding a half tail must exist.
        if p.offset + p.len.next_multiple_of(4) > p.buffer.size() {
            return Err(bad(format!(
                "part {i}: bytes {}..{} exceed its buffer of {} bytes",
                p.offset,
                p.offset + p.len.next_multiple_of(4),
                p.buffer.size()
            )));
        }
        total += p.len;
    }
    if total != m.bytes() {
        return Err(bad(format!(
            "parts hold {total} bytes but {}x{} {:?} needs {}",
            m.rows,
            m.cols,
            m.dtype,
            m.bytes()
        )));
    }
    Ok(())
}
