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

use std::collections::BTreeSet;

use crate::view::Matrix;
use crate::{KernelError, KernelLimits};

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
    },
    /// Gathered from `chunks` into scratch (element 0 of the binding).
    Gather { chunks: Vec<Chunk<'a>>, size: u64 },
}

impl Bind<'_> {
    /// Element offset of the operand's first element inside the binding.
    pub fn elem(&self) -> u64 {
        match self {
            Bind::Direct { elem, .. } => *elem,
            Bind::Gather { .. } => 0,
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
    Gather(Vec<Chunk<'a>>),
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
        let row_bytes = m.cols * m.dtype.size();
        if m.rows > 0 && row_bytes > lim.max_binding {
            return Err(KernelError::RowTooLarge {
                name: name.to_string(),
                row_bytes,
                max_binding: lim.max_binding,
            });
        }
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
            let aligned = at - at % lim.offset_align;
            let fit_binding = (aligned + lim.max_binding).saturating_sub(at) / row_bytes;
            let mut n = fit_part.min(fit_binding).min(m.rows - r);
            if n == 0 {
                let chunks = gather_chunks(m, part, part_start, start, row_bytes);
                spans.push(Span {
                    start: r,
                    end: r + 1,
                    kind: SpanKind::Gather(chunks),
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
            align: lim.offset_align,
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
            SpanKind::Gather(chunks) => Bind::Gather {
                chunks: chunks.clone(),
                size: self.row_bytes.max(4),
            },
            SpanKind::Direct { part, byte } => {
                let p = &self.m.parts[*part];
                let at = p.offset + byte + (s - sp.start) * self.row_bytes;
                let offset = at - at % self.align;
                let end = at + (e - s) * self.row_bytes;
                Bind::Direct {
                    buffer: p.buffer,
                    offset,
                    size: (end - offset).max(4),
                    elem: (at - offset) / 4,
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

fn gather_chunks<'a>(
    m: &Matrix<'a>,
    mut part: usize,
    mut part_start: u64,
    start: u64,
    row_bytes: u64,
) -> Vec<Chunk<'a>> {
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
    chunks
}

fn check_parts(name: &str, m: &Matrix<'_>) -> Result<(), KernelError> {
    let bad = |reason: String| KernelError::Parts {
        name: name.to_string(),
        reason,
    };
    let mut total = 0u64;
    for (i, p) in m.parts.iter().enumerate() {
        if p.offset % 4 != 0 || p.len % 4 != 0 {
            return Err(bad(format!(
                "part {i}: offset {} and len {} must be multiples of 4",
                p.offset, p.len
            )));
        }
        if p.offset + p.len > p.buffer.size() {
            return Err(bad(format!(
                "part {i}: bytes {}..{} exceed its buffer of {} bytes",
                p.offset,
                p.offset + p.len,
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
