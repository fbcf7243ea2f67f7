//! `torch.cuda.memory_stats()`'s flat dictionary (`allocated_bytes.all.current`, …), so the
//! engine's counters can be handed to PyTorch's own tools and read back.

use crate::alloc::{MemoryStats, PoolStat, Stat};
use std::collections::BTreeMap;

const POOLS: [&str; 3] = ["all", "large_pool", "small_pool"];
const FIELDS: [&str; 4] = ["current", "peak", "allocated", "freed"];

fn stat_fields(s: &mut Stat) -> [&mut u64; 4] {
    [&mut s.current, &mut s.peak, &mut s.allocated, &mut s.freed]
}

fn pool_stats(p: &mut PoolStat) -> [&mut Stat; 3] {
    [&mut p.all, &mut p.large_pool, &mut p.small_pool]
}

/// Every counter with PyTorch's key; `f` sees each one once.
fn each_counter(stats: &mut MemoryStats, mut f: impl FnMut(String, &mut u64)) {
    let pooled: [(&str, &mut PoolStat); 9] = [
        ("active", &mut stats.active),
        ("active_bytes", &mut stats.active_bytes),
        ("allocated_bytes", &mut stats.allocated_bytes),
        ("allocation", &mut stats.allocation),
        ("inactive_split", &mut stats.inactive_split),
        ("inactive_split_bytes", &mut stats.inactive_split_bytes),
        ("requested_bytes", &mut stats.requested_bytes),
        ("reserved_bytes", &mut stats.reserved_bytes),
        ("segment", &mut stats.segment),
    ];
    for (name, p) in pooled {
        for (pool, s) in POOLS.iter().zip(pool_stats(p)) {
            for (field, v) in FIELDS.iter().zip(stat_fields(s)) {
                f(format!("{name}.{pool}.{field}"), v);
            }
        }
    }
    for (name, s) in [
        ("oversize_allocations", &mut stats.oversize_allocations),
        ("oversize_segments", &mut stats.oversize_segments),
    ] {
        for (field, v) in FIELDS.iter().zip(stat_fields(s)) {
            f(format!("{name}.{field}"), v);
        }
    }
    for (name, v) in [
        ("num_alloc_retries", &mut stats.num_alloc_retries),
        ("num_ooms", &mut stats.num_ooms),
        ("num_device_alloc", &mut stats.num_device_alloc),
        ("num_device_free", &mut stats.num_device_free),
    ] {
        f(name.to_string(), v);
    }
}

/// The counters as `torch.cuda.memory_stats()` names them. `num_sync_all_streams` is 0: the
/// engine has one stream, so it never synchronizes all of them.
pub fn pytorch_stats(stats: &MemoryStats) -> BTreeMap<String, u64> {
    let mut copy = stats.clone();
    let mut out = BTreeMap::from([("num_sync_all_streams".to_string(), 0)]);
    each_counter(&mut copy, |k, v| {
        out.insert(k, *v);
    });
    out
}

/// The counters back from PyTorch's keys; a missing key is an error that names it.
pub fn from_pytorch_stats(dict: &BTreeMap<String, u64>) -> Result<MemoryStats, String> {
    let mut stats = MemoryStats::default();
    let mut missing = Vec::new();
    each_counter(&mut stats, |k, v| match dict.get(&k) {
        Some(&x) => *v = x,
        None => missing.push(k),
    });
    if missing.is_empty() {
        Ok(stats)
    } else {
        Err(format!("memory_stats() lacks {}", missing.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dictionary_round_trips_with_pytorchs_keys() {
        let mut s = MemoryStats::default();
        s.allocated_bytes.large_pool.peak = 7;
        s.oversize_segments.freed = 3;
        s.num_ooms = 2;
        let d = pytorch_stats(&s);
        assert_eq!(d["allocated_bytes.large_pool.peak"], 7);
        assert_eq!(d["oversize_segments.freed"], 3);
        assert_eq!(d["num_ooms"], 2);
        assert_eq!(d.len(), 9 * 12 + 2 * 4 + 4 + 1);
        assert_eq!(from_pytorch_stats(&d), Ok(s));
        let mut short = d.clone();
        short.remove("segment.small_pool.freed");
        let e = from_pytorch_stats(&short).unwrap_err();
        assert!(e.contains("segment.small_pool.freed"), "{e}");
    }
}
