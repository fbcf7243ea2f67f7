//! The out-of-memory error, in either of PyTorch's two wordings so a learner can read ours
//! beside theirs number by number.
//!
//! The first line is PyTorch's sentence as `c10/cuda/CUDACachingAllocator.cpp` builds it, with
//! three deliberate differences: it starts `out of memory.` (no CUDA here), it names the
//! device and its backing where PyTorch writes `GPU 0` (`plan device 0`), and it names the
//! allocator `gpumem` where PyTorch names itself. PyTorch's own advice sentence follows
//! verbatim, settings names and all. The engine's own lines (the backing's refusal, a
//! fragmented cache, what to try) come after, each on its own indented line.

use crate::size::format_bytes;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// PyTorch's advice after the lesson's sentence (versions with `max_split_size_mb`, up to
/// 2.0), verbatim: two spaces before "See", as PyTorch prints it.
pub const LESSON_ADVICE: &str = " If reserved memory is >> allocated memory try setting \
max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and \
PYTORCH_CUDA_ALLOC_CONF";

/// PyTorch's advice after today's sentence, verbatim (PyTorch 2.15's text; two spaces before
/// "See" and before the link, as PyTorch prints it).
pub const CURRENT_ADVICE: &str = " If reserved but unallocated memory is large try setting \
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation \
for Memory Management  \
(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)";

/// Which of PyTorch's out-of-memory sentences the message uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomMessage {
    /// PyTorch up to 2.0: `Tried to allocate X (GPU 0; T total capacity; …)`, the form the
    /// lesson quotes.
    #[default]
    Lesson,
    /// Today's PyTorch: `Tried to allocate X. GPU 0 has a total capacity of T of which F is
    /// free. …`
    Current,
}

impl fmt::Display for OomMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            OomMessage::Lesson => "lesson",
            OomMessage::Current => "current",
        })
    }
}

impl FromStr for OomMessage {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "lesson" => Ok(OomMessage::Lesson),
            "current" => Ok(OomMessage::Current),
            other => Err(format!(
                "unknown out-of-memory message form `{other}` (lesson: PyTorch up to 2.0, as the \
                 lesson quotes it; current: today's PyTorch)"
            )),
        }
    }
}

/// Why the last attempt to get a segment failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum OomCause {
    /// The emulated card's capacity would have been exceeded.
    Capacity,
    /// The backing itself refused (host memory or the GPU driver); the text is its own.
    Backing(String),
}

/// A request the allocator could not serve, with the figures PyTorch prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct OutOfMemory {
    /// What the memory was for (`z1`, `layer3.weight`, …).
    pub label: String,
    /// Bytes asked for.
    pub requested: u64,
    /// Bytes of the segment the allocator tried to take from the device (what PyTorch calls
    /// "Tried to allocate": the request rounded to the allocator's segment sizes).
    pub tried: u64,
    /// The device's total capacity, when it is known.
    pub capacity: Option<u64>,
    /// `memory_allocated()` when it failed.
    pub allocated: u64,
    /// `memory_reserved()` when it failed.
    pub reserved: u64,
    /// Free bytes on the device, when known (on an emulated card: capacity − memory outside
    /// the allocator − reserved, as the driver would count it).
    pub free: Option<u64>,
    /// What a per-process memory fraction lets the allocator reserve (PyTorch's
    /// `allowed_memory_maximum`), when one is set.
    #[serde(default)]
    pub allowed: Option<u64>,
    /// Device memory held outside the allocator (the CUDA context, other processes).
    #[serde(default)]
    pub context_memory: u64,
    /// Where the device is, e.g. `plan device 0`.
    pub device: String,
    pub cause: OomCause,
    /// Which of PyTorch's sentences [`Display`](fmt::Display) writes.
    #[serde(default)]
    pub message: OomMessage,
}

impl OutOfMemory {
    /// Reserved but unallocated bytes: the cache that could not be used for this request.
    pub fn cached_unused(&self) -> u64 {
        self.reserved.saturating_sub(self.allocated)
    }

    /// True when the cache held at least the bytes the message says it tried to allocate
    /// (`tried`, the request as the allocator rounded it), yet none of its blocks could serve
    /// the request: the memory is fragmented. PyTorch prints its advice on every
    /// out-of-memory error; the engine adds its line only when this holds, and compares the
    /// figure the line is read beside, not the bytes the tensor asked for.
    pub fn is_fragmentation(&self) -> bool {
        self.cached_unused() >= self.tried
    }

    /// What today's message calls "this process has P memory in use": reserved plus the
    /// memory outside the allocator (on a real card the driver counts this process alone;
    /// here other processes are in the same figure).
    pub fn process_in_use(&self) -> u64 {
        self.reserved.saturating_add(self.context_memory)
    }

    /// The message with the other sentence.
    pub fn with_message(&self, message: OomMessage) -> OutOfMemory {
        OutOfMemory {
            message,
            ..self.clone()
        }
    }

    fn device_name(&self) -> &str {
        if self.device.is_empty() {
            "device 0"
        } else {
            &self.device
        }
    }

    /// `M allowed; ` when a memory fraction is set, as PyTorch writes it.
    fn allowed_info(&self) -> String {
        self.allowed
            .map(|a| format!("{} allowed; ", format_bytes(a)))
            .unwrap_or_default()
    }

    /// PyTorch's sentence exactly as PyTorch prints it (`CUDA out of memory.`, `GPU 0`,
    /// `PyTorch`), without the engine's lines: what a replay predicts a learner's run prints.
    pub fn pytorch_sentence(&self) -> String {
        let names = Names {
            start: "CUDA out of memory.",
            device: "GPU 0",
            allocator: "PyTorch",
        };
        match self.message {
            OomMessage::Lesson => self.lesson_sentence(&names),
            OomMessage::Current => self.current_sentence(&names),
        }
    }

    /// The engine's names in PyTorch's sentence.
    fn our_names(&self) -> Names<'_> {
        Names {
            start: "out of memory.",
            device: self.device_name(),
            allocator: "gpumem",
        }
    }

    /// PyTorch up to 2.0 (`c10/cuda/CUDACachingAllocator.cpp`, `DeviceCachingAllocator::malloc`).
    fn lesson_sentence(&self, n: &Names<'_>) -> String {
        format!(
            "{} Tried to allocate {} ({}; {} total capacity; {} already allocated; {} free; \
             {}{} reserved in total by {}){LESSON_ADVICE}",
            n.start,
            format_bytes(self.tried),
            n.device,
            opt_bytes(self.capacity),
            format_bytes(self.allocated),
            opt_bytes(self.free),
            self.allowed_info(),
            format_bytes(self.reserved),
            n.allocator,
        )
    }

    /// Today's PyTorch (same file and function). PyTorch asks NVML for every process on the
    /// card; the engine has one process, whose memory is reserved + memory outside the
    /// allocator.
    fn current_sentence(&self, n: &Names<'_>) -> String {
        format!(
            "{} Tried to allocate {}. {} has a total capacity of {} of which {} is free. \
             Including non-{} memory, this process has {} memory in use. {}Of the allocated \
             memory {} is allocated by {}, and {} is reserved by {} but unallocated.\
             {CURRENT_ADVICE}",
            n.start,
            format_bytes(self.tried),
            n.device,
            opt_bytes(self.capacity),
            opt_bytes(self.free),
            n.allocator,
            format_bytes(self.process_in_use()),
            self.allowed_info(),
            format_bytes(self.allocated),
            n.allocator,
            format_bytes(self.cached_unused()),
            n.allocator,
        )
    }

    /// The engine's own lines, after PyTorch's sentence.
    fn engine_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let OomCause::Backing(why) = &self.cause {
            write!(f, "\n  the device refused: {why}")?;
        }
        if self.is_fragmentation() {
            write!(
                f,
                "\n  Reserved memory is much larger than allocated memory: {} is cached but \
                 unallocated, more than this request, yet no free block is large enough. The \
                 cache is fragmented: try max_split_size (PyTorch's max_split_size_mb) or \
                 empty_cache() between phases.",
                format_bytes(self.cached_unused())
            )?;
        }
        write!(
            f,
            "\n  To fit: use a smaller batch, fewer or narrower layers, mixed precision, \
             gradient accumulation or activation checkpointing."
        )
    }
}

/// What the sentence calls the error, the device and the allocator.
struct Names<'a> {
    start: &'a str,
    device: &'a str,
    allocator: &'a str,
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or_else(|| "unknown".to_string(), format_bytes)
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.our_names();
        let sentence = match self.message {
            OomMessage::Lesson => self.lesson_sentence(&names),
            OomMessage::Current => self.current_sentence(&names),
        };
        f.write_str(&sentence)?;
        self.engine_lines(f)
    }
}

#[cfg(test)]
mod tests;
