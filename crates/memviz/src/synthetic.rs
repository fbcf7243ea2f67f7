//! A snapshot of a real run's shape, made deterministically for the benchmark and the tests:
//! a trace of a million events from a caching allocator that reuses freed blocks of the same
//! size, a few hundred activations alive at a time, and tens of thousands of tensors that are
//! never freed (a slow leak), with Python stacks shared between entries as PyTorch shares
//! them. Nobody can commit a 50 MB snapshot of a real run, and the reader's and the drawing's
//! costs depend on exactly this shape (events × live tensors), so the benchmark makes it.
//!
//! The file is consistent: the segments at the dump hold exactly the tensors the trace leaves
//! alive, each segment tiled by its blocks, and the trace's `segment_alloc` entries add up to
//! the segments' bytes.

mod pickle;

use pickle::{BATCH, Pickler};
use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// What to make.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Trace entries (the file has this many, or one more).
    pub events: usize,
    /// Tensors allocated and never freed, spread evenly over the trace (the first 200 are
    /// large, like a model's parameters).
    pub leaked: usize,
    /// Activations alive at once, at most.
    pub transient: usize,
    /// Distinct Python stacks.
    pub stacks: usize,
    pub seed: u64,
}

impl Shape {
    /// The real run: 1,000,000 events, about 20,000 tensors alive at the end.
    pub const REAL_RUN: Shape = Shape {
        events: 1_000_000,
        leaked: 20_000,
        transient: 300,
        stacks: 400,
        seed: 28,
    };
}

/// What was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    pub events: usize,
    /// Tensors alive at the dump.
    pub live: usize,
    pub segments: usize,
    pub file_bytes: u64,
}

/// SplitMix64: deterministic on every platform, no dependency.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const SEGMENT: i64 = 32 << 20;
const PARAMS: usize = 200;
const NAMES: [&str; 12] = [
    "linear",
    "gelu",
    "layer_norm",
    "softmax",
    "matmul",
    "add",
    "dropout",
    "cat",
    "empty_like",
    "mul",
    "scaled_dot_product_attention",
    "embedding",
];

/// A block carved from a segment: it keeps its address and size for good, and is reused
/// for a later request of the same size class once freed.
#[derive(Debug)]
struct Carved {
    addr: i64,
    size: i64,
    /// `(requested bytes, stack)` while in use.
    live: Option<(i64, usize)>,
}

#[derive(Debug, Default)]
struct Allocator {
    segments: Vec<(i64, i64, Vec<usize>)>,
    used_in_last: i64,
    next_addr: i64,
    blocks: Vec<Carved>,
    free: HashMap<i64, Vec<usize>>,
}

impl Allocator {
    /// The block for a request of `class` bytes, and a new segment `(addr, size)` if one
    /// had to be made.
    fn alloc(&mut self, class: i64, requested: i64, stack: usize) -> (usize, Option<(i64, i64)>) {
        if let Some(b) = self.free.get_mut(&class).and_then(Vec::pop) {
            self.blocks[b].live = Some((requested, stack));
            return (b, None);
        }
        let mut new = None;
        if self.segments.is_empty() || self.used_in_last + class > self.segments_last_size() {
            let size = SEGMENT.max((class + (2 << 20) - 1) / (2 << 20) * (2 << 20));
            let addr = 0x7f00_0000_0000 + self.next_addr;
            self.next_addr += size + (2 << 20);
            self.segments.push((addr, size, Vec::new()));
            self.used_in_last = 0;
            new = Some((addr, size));
        }
        let b = self.blocks.len();
        let Some(seg) = self.segments.last_mut() else {
            unreachable!("a segment was just made")
        };
        self.blocks.push(Carved {
            addr: seg.0 + self.used_in_last,
            size: class,
            live: Some((requested, stack)),
        });
        seg.2.push(b);
        self.used_in_last += class;
        (b, new)
    }

    fn segments_last_size(&self) -> i64 {
        self.segments.last().map_or(0, |s| s.1)
    }

    fn free(&mut self, b: usize) -> i64 {
        let requested = self.blocks[b].live.take().map_or(0, |l| l.0);
        self.free.entry(self.blocks[b].size).or_default().push(b);
        requested
    }
}

/// Writes the snapshot of `shape` to `path`.
pub fn write(path: &Path, shape: &Shape) -> io::Result<Made> {
    let file = std::fs::File::create(path)?;
    let mut w = Writer {
        p: Pickler::new(BufWriter::with_capacity(1 << 20, file))?,
        stacks: Vec::new(),
        frames: Vec::new(),
        rng: Rng(shape.seed),
        in_batch: 0,
        time: 1_700_000_000_000_000,
    };
    w.make_stacks(shape.stacks.max(1))?;
    w.p.dict()?;
    w.p.mark()?;
    w.p.str("device_traces")?;
    w.p.list()?;
    w.p.mark()?;
    w.p.list()?;
    w.p.mark()?;
    let mut a = Allocator::default();
    let mut transient: Vec<usize> = Vec::new();
    let (mut events, mut leaked) = (0usize, 0usize);
    while events < shape.events {
        let due = PARAMS.min(shape.leaked) + shape.leaked * events / shape.events.max(1);
        let (class, stack, keep) = if leaked < due.min(shape.leaked) {
            leaked += 1;
            let exp = if leaked <= PARAMS {
                20 + w.rng.below(5)
            } else {
                9 + w.rng.below(8)
            };
            (1i64 << exp, w.rng.below(shape.stacks.max(1)), true)
        } else if transient.len() < shape.transient && (transient.is_empty() || w.rng.below(2) == 0)
        {
            let exp = 9 + w.rng.below(17);
            (1i64 << exp, w.rng.below(shape.stacks.max(1)), false)
        } else {
            let b = transient.swap_remove(w.rng.below(transient.len()));
            let stack = a.blocks[b].live.map_or(0, |l| l.1);
            let addr = a.blocks[b].addr;
            let requested = a.free(b);
            w.entry("free_requested", addr, requested, stack)?;
            w.entry("free_completed", addr, requested, stack)?;
            events += 2;
            continue;
        };
        let requested = class - 512 * w.rng.below((class / 2048).max(1) as usize) as i64;
        let (b, segment) = a.alloc(class, requested, stack);
        if let Some((addr, size)) = segment {
            w.entry("segment_alloc", addr, size, stack)?;
            events += 1;
        }
        w.entry("alloc", a.blocks[b].addr, requested, stack)?;
        events += 1;
        if !keep {
            transient.push(b);
        }
    }
    w.p.appends()?; // the last batch into the device's list
    w.p.appends()?; // the device's list into device_traces
    w.p.str("segments")?;
    w.segments(&a)?;
    w.p.setitems()?;
    let out = w.p.finish()?;
    let file_bytes = out
        .into_inner()
        .map_err(|e| e.into_error())?
        .metadata()?
        .len();
    Ok(Made {
        events,
        live: a.blocks.iter().filter(|b| b.live.is_some()).count(),
        segments: a.segments.len(),
        file_bytes,
    })
}

struct Writer<W: Write> {
    p: Pickler<W>,
    /// Each stack's frames (indices into `frames`) and its memo id once written.
    stacks: Vec<(Vec<usize>, Option<u32>)>,
    /// Each frame's `(filename, line, name)` and its memo id once written.
    frames: Vec<((String, i64, String), Option<u32>)>,
    rng: Rng,
    in_batch: usize,
    time: i64,
}

impl<W: Write> Writer<W> {
    fn make_stacks(&mut self, n: usize) -> io::Result<()> {
        for i in 0..n * 4 {
            let file = format!("/usr/lib/python3/site-packages/model/block{}.py", i % 40);
            let name = if i < NAMES.len() * 8 {
                NAMES[i % NAMES.len()].to_string()
            } else {
                format!("forward_{}", i % 97)
            };
            let line = (self.rng.below(900) + 10) as i64;
            self.frames.push(((file, line, name), None));
        }
        for _ in 0..n {
            let depth = 8 + self.rng.below(24);
            let top = self.rng.below(NAMES.len() * 8);
            let mut frames = vec![top];
            frames.extend((1..depth).map(|_| self.rng.below(n * 4)));
            self.stacks.push((frames, None));
        }
        Ok(())
    }

    /// A stack's frames list, written in full the first time and fetched after that.
    fn frames(&mut self, stack: usize) -> io::Result<()> {
        if let Some(id) = self.stacks[stack].1 {
            return self.p.get(id);
        }
        let id = self.p.list()?;
        self.p.mark()?;
        for k in 0..self.stacks[stack].0.len() {
            let f = self.stacks[stack].0[k];
            if let Some(fid) = self.frames[f].1 {
                self.p.get(fid)?;
                continue;
            }
            let fid = self.p.dict()?;
            let (file, line, name) = self.frames[f].0.clone();
            self.p.mark()?;
            self.p.str("filename")?;
            self.p.str(&file)?;
            self.p.str("line")?;
            self.p.int(line)?;
            self.p.str("name")?;
            self.p.str(&name)?;
            self.p.setitems()?;
            self.frames[f].1 = Some(fid);
        }
        self.p.appends()?;
        self.stacks[stack].1 = Some(id);
        Ok(())
    }

    /// One trace entry, with the keys PyTorch 2.x writes.
    fn entry(&mut self, action: &str, addr: i64, size: i64, stack: usize) -> io::Result<()> {
        self.time += 1 + self.rng.below(40) as i64;
        self.p.dict()?;
        self.p.mark()?;
        for (k, v) in [("action", action), ("compile_context", "N/A")] {
            self.p.str(k)?;
            self.p.str(v)?;
        }
        for (k, v) in [
            ("addr", addr),
            ("size", size),
            ("stream", 0),
            ("time_us", self.time),
        ] {
            self.p.str(k)?;
            self.p.int(v)?;
        }
        self.p.str("frames")?;
        self.frames(stack)?;
        self.p.setitems()?;
        self.in_batch += 1;
        if self.in_batch == BATCH {
            self.end_batch()?;
        }
        Ok(())
    }

    /// Closes the trace's current APPENDS batch and opens the next.
    fn end_batch(&mut self) -> io::Result<()> {
        self.p.appends()?;
        self.p.mark()?;
        self.in_batch = 0;
        Ok(())
    }

    fn segments(&mut self, a: &Allocator) -> io::Result<()> {
        self.p.list()?;
        self.p.mark()?;
        for (addr, size, carved) in &a.segments {
            let live = carved
                .iter()
                .filter_map(|&b| a.blocks[b].live.map(|l| (b, l)));
            let allocated: i64 = live.clone().map(|(b, _)| a.blocks[b].size).sum();
            let requested: i64 = live.map(|(_, l)| l.0).sum();
            self.p.dict()?;
            self.p.mark()?;
            for (k, v) in [
                ("device", 0),
                ("address", *addr),
                ("total_size", *size),
                ("stream", 0),
                ("allocated_size", allocated),
                ("active_size", allocated),
                ("requested_size", requested),
            ] {
                self.p.str(k)?;
                self.p.int(v)?;
            }
            self.p.str("segment_type")?;
            self.p.str("large")?;
            self.p.str("is_expandable")?;
            self.p.bool(false)?;
            self.p.str("blocks")?;
            self.blocks(a, *addr, *size, carved)?;
            self.p.setitems()?;
        }
        self.p.appends()
    }

    /// A segment's blocks in address order, neighbouring free ones merged, as PyTorch's
    /// allocator merges them; the uncarved end is one free block.
    fn blocks(&mut self, a: &Allocator, addr: i64, size: i64, carved: &[usize]) -> io::Result<()> {
        self.p.list()?;
        self.p.mark()?;
        let mut free_from: Option<i64> = None;
        let mut at = addr;
        for &b in carved {
            let c = &a.blocks[b];
            match c.live {
                None => {
                    free_from.get_or_insert(c.addr);
                }
                Some((requested, stack)) => {
                    if let Some(f) = free_from.take() {
                        self.block(f, c.addr - f, None)?;
                    }
                    self.block(c.addr, c.size, Some((requested, stack)))?;
                }
            }
            at = c.addr + c.size;
        }
        let f = free_from.unwrap_or(at);
        if f < addr + size {
            self.block(f, addr + size - f, None)?;
        }
        self.p.appends()
    }

    fn block(&mut self, addr: i64, size: i64, live: Option<(i64, usize)>) -> io::Result<()> {
        self.p.dict()?;
        self.p.mark()?;
        self.p.str("address")?;
        self.p.int(addr)?;
        self.p.str("size")?;
        self.p.int(size)?;
        self.p.str("requested_size")?;
        self.p.int(live.map_or(0, |l| l.0))?;
        self.p.str("state")?;
        self.p.str(if live.is_some() {
            "active_allocated"
        } else {
            "inactive"
        })?;
        self.p.str("frames")?;
        match live {
            Some((_, stack)) => self.frames(stack)?,
            None => {
                self.p.list()?;
            }
        }
        self.p.setitems()
    }
}
