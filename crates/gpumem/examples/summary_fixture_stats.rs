//! The engine's `memory_stats()` for a few small scenarios, as PyTorch's flat dictionaries:
//! the input of `reference/pytorch/memory_summary.py`, which prints PyTorch's own
//! `memory_summary()` for each into `tests/fixtures/pytorch_memory_summary.json`
//! (the test `tests/memory_summary.rs` holds the engine's table to it).
//!
//! `cargo run -p gpumem --example summary_fixture_stats > /tmp/stats.json`

use gpumem::alloc::{AllocatorConfig, MemoryStats};
use gpumem::device::{Backend, Device, DeviceOptions};
use gpumem::report::pytorch_stats;
use gpumem::size::MemorySpec;
use gpumem::tensor::{DType, Tensor};
use serde_json::json;
use std::process::ExitCode;

const MIB: u64 = 1 << 20;

fn device(capacity: u64, max_split_size: Option<u64>) -> Result<Device, gpumem::Error> {
    Device::new(&DeviceOptions {
        backend: Backend::Plan,
        memory: MemorySpec::Bytes(capacity),
        allocator: AllocatorConfig {
            max_split_size,
            ..Default::default()
        },
        ..Default::default()
    })
}

/// Small and large tensors, frees that leave split segments, and one request too many:
/// every row of the table has something in it.
fn scenario(dev: &Device) -> Result<MemoryStats, gpumem::Error> {
    let t = |rows, cols, label: &str| {
        Tensor::new(dev, rows, cols, DType::F32, gpumem::Role::Temporary, label)
    };
    let mut keep = Vec::new();
    for i in 0..6u64 {
        let small = t(100 + 37 * i, 10, "small")?;
        if i % 2 == 0 {
            keep.push(small);
        }
    }
    let w = t(1000, 1000, "w")?;
    let big = t(3000, 3000, "big")?;
    let part = t(1000, 2000, "part")?;
    drop(big);
    keep.push(t(2000, 2000, "reuse")?);
    drop(w);
    let oom = t(20_000, 1000, "too_big");
    assert!(oom.is_err(), "the scenario's last request should not fit");
    keep.push(part);
    Ok(dev.memory_stats())
}

fn main() -> ExitCode {
    let cases = || -> Result<serde_json::Value, gpumem::Error> {
        let plain = scenario(&device(96 * MIB, None)?)?;
        let split = scenario(&device(96 * MIB, Some(20 * MIB))?)?;
        // Figures past PyTorch's unit and count thresholds, which a small card never reaches.
        let mut large = plain.clone();
        large.allocated_bytes.all.allocated = 800 << 40;
        large.allocated_bytes.large_pool.allocated = (800 << 40) - 3;
        large.requested_bytes.all.allocated = 900 << 30;
        large.requested_bytes.large_pool.allocated = 900 << 30;
        large.reserved_bytes.all.peak = 767 << 30;
        large.reserved_bytes.large_pool.peak = 767 << 30;
        large.allocation.all.allocated = 1_234_567;
        large.allocation.small_pool.allocated = 1_234_000;
        large.active.all.freed = 2_000_000_000;
        large.active.large_pool.freed = 749_999;
        large.oversize_allocations.allocated = 750_000;
        Ok(json!({ "cases": [
            {"name": "scenario", "abbreviated": false, "stats": pytorch_stats(&plain)},
            {"name": "scenario_max_split_size_20MiB", "abbreviated": false, "stats": pytorch_stats(&split)},
            {"name": "scenario_abbreviated", "abbreviated": true, "stats": pytorch_stats(&plain)},
            {"name": "large_figures", "abbreviated": false, "stats": pytorch_stats(&large)},
        ]}))
    };
    match cases() {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
