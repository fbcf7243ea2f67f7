//! Human-readable reports: `memory_summary()` in PyTorch's own layout, and `memory_stats()` as
//! PyTorch's flat dictionary. Reports read the device; the device knows nothing of them.

mod dict;
mod summary;

pub use dict::{from_pytorch_stats, pytorch_stats};
pub use summary::{PYTORCH_TITLE, summary_table};

use crate::alloc::MemoryStats;
use crate::device::{Device, DeviceInfo};

impl Device {
    /// `torch.cuda.memory_summary()`: the allocator's statistics as PyTorch's table.
    pub fn memory_summary(&self) -> String {
        let inner = self.borrow();
        memory_summary(&inner.info, inner.alloc.stats())
    }
}

/// The allocator's statistics in the layout of `torch.cuda.memory_summary()`, titled with
/// the engine's name and the backing where PyTorch's title names itself and CUDA.
pub fn memory_summary(info: &DeviceInfo, stats: &MemoryStats) -> String {
    let title = format!(
        "gpumem memory summary, {} backing, device ID 0",
        info.backend
    );
    summary_table(&title, stats, false)
}

#[cfg(test)]
mod tests {
    use crate::device::Device;
    use crate::tensor::{DType, Tensor};

    #[test]
    fn summary_shows_the_allocators_figures() {
        let dev = Device::plan(1 << 30);
        let t = Tensor::new(&dev, 1000, 1000, DType::F32, crate::Role::Temporary, "w").unwrap();
        let s = dev.memory_summary();
        assert!(
            s.lines()
                .nth(1)
                .unwrap()
                .contains("gpumem memory summary, plan backing, device ID 0"),
            "{s}"
        );
        let row = |name: &str| {
            s.lines()
                .find(|l| l.starts_with(&format!("| {name}")))
                .unwrap()
                .to_string()
        };
        // 4 MB lands in a 20 MiB segment, split: 3906 KiB allocated, 20480 KiB reserved (PyTorch
        // keeps KiB up to 768 MiB).
        assert!(row("Allocated memory").contains("|   3906 KiB |"), "{s}");
        assert!(row("GPU reserved memory").contains("|  20480 KiB |"), "{s}");
        assert!(
            row("GPU reserved segments").contains("|       1    |"),
            "{s}"
        );
        assert!(s.lines().all(|l| l.chars().count() == 77), "{s}");
        drop(t);
    }
}
