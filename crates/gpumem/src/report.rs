//! Human-readable reports: the `memory_summary()` table. Reports read the device; the
//! device knows nothing of them.

use crate::alloc::{MemoryStats, PoolStat, Stat};
use crate::device::{Device, DeviceInfo};
use crate::size::format_bytes;
use std::fmt::Write;

const WIDTH: usize = 79;

fn rule(out: &mut String, c: char) {
    let _ = writeln!(out, "|{}|", c.to_string().repeat(WIDTH - 2));
}

fn centered(out: &mut String, text: &str) {
    let _ = writeln!(out, "|{:^w$}|", text, w = WIDTH - 2);
}

fn row(out: &mut String, name: &str, s: &Stat, fmt: &dyn Fn(u64) -> String) {
    let _ = writeln!(
        out,
        "| {:<23} | {:>10} | {:>10} | {:>10} | {:>10} |",
        name,
        fmt(s.current),
        fmt(s.peak),
        fmt(s.allocated),
        fmt(s.freed)
    );
}

fn pool_rows(out: &mut String, name: &str, s: &PoolStat, fmt: &dyn Fn(u64) -> String) {
    row(out, name, &s.all, fmt);
    row(out, "      from large pool", &s.large_pool, fmt);
    row(out, "      from small pool", &s.small_pool, fmt);
}

/// Bytes in the table's short form (`8.74 GiB`, `512 B`).
fn short_bytes(b: u64) -> String {
    if b < 1024 {
        format!("{b} B")
    } else {
        format_bytes(b)
    }
}

impl Device {
    /// `torch.cuda.memory_summary()`: a table of the allocator's statistics.
    pub fn memory_summary(&self) -> String {
        let inner = self.borrow();
        memory_summary(&inner.info, inner.alloc.stats())
    }
}

/// A table of the allocator's statistics in the layout of `torch.cuda.memory_summary()`.
pub fn memory_summary(info: &DeviceInfo, stats: &MemoryStats) -> String {
    let mut out = String::new();
    let bytes = |b: u64| short_bytes(b);
    let count = |n: u64| n.to_string();
    rule(&mut out, '=');
    centered(
        &mut out,
        &format!(
            "gpumem memory summary, {} backing, {} card",
            info.backend, info.memory
        ),
    );
    rule(&mut out, '-');
    let _ = writeln!(
        out,
        "| {:<36}| {:<37} |",
        format!("Out-of-memory errors: {}", stats.num_ooms),
        format!("Retries after emptying cache: {}", stats.num_alloc_retries)
    );
    let _ = writeln!(
        out,
        "| {:<36}| {:<37} |",
        format!("Device allocations: {}", stats.num_device_alloc),
        format!("Device frees: {}", stats.num_device_free)
    );
    rule(&mut out, '=');
    let _ = writeln!(
        out,
        "| {:<23} | {:>10} | {:>10} | {:>10} | {:>10} |",
        "Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"
    );
    rule(&mut out, '-');
    pool_rows(&mut out, "Allocated memory", &stats.allocated_bytes, &bytes);
    rule(&mut out, '-');
    pool_rows(&mut out, "Active memory", &stats.active_bytes, &bytes);
    rule(&mut out, '-');
    pool_rows(&mut out, "Requested memory", &stats.requested_bytes, &bytes);
    rule(&mut out, '-');
    pool_rows(&mut out, "Reserved memory", &stats.reserved_bytes, &bytes);
    rule(&mut out, '-');
    pool_rows(
        &mut out,
        "Non-releasable memory",
        &stats.inactive_split_bytes,
        &bytes,
    );
    rule(&mut out, '-');
    pool_rows(&mut out, "Allocations", &stats.allocation, &count);
    rule(&mut out, '-');
    pool_rows(&mut out, "Active allocs", &stats.active, &count);
    rule(&mut out, '-');
    pool_rows(&mut out, "Reserved segments", &stats.segment, &count);
    rule(&mut out, '-');
    pool_rows(
        &mut out,
        "Non-releasable allocs",
        &stats.inactive_split,
        &count,
    );
    rule(&mut out, '-');
    row(
        &mut out,
        "Oversize allocations",
        &stats.oversize_allocations,
        &count,
    );
    row(
        &mut out,
        "Oversize segments",
        &stats.oversize_segments,
        &count,
    );
    rule(&mut out, '=');
    out
}

#[cfg(test)]
mod tests {
    use crate::device::Device;
    use crate::tensor::{DType, Tensor};

    #[test]
    fn summary_shows_the_allocators_figures() {
        let dev = Device::plan(1 << 30);
        let t = Tensor::new(&dev, 1000, 1000, DType::F32, "w").unwrap();
        let s = dev.memory_summary();
        assert!(s.contains("plan backing, 1024.00 MiB card"), "{s}");
        let allocated = s
            .lines()
            .find(|l| l.starts_with("| Allocated memory"))
            .unwrap();
        // 4 MB lands in a 20 MiB segment, split: 3.81 MiB allocated, 20 MiB reserved.
        assert!(allocated.contains("3.81 MiB"), "{allocated}");
        let reserved = s
            .lines()
            .find(|l| l.starts_with("| Reserved memory"))
            .unwrap();
        assert!(reserved.contains("20.00 MiB"), "{reserved}");
        assert!(s.lines().all(|l| l.chars().count() == 79), "{s}");
        drop(t);
    }
}
