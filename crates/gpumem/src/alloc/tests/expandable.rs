//! `expandable_segments:True` in hand-computed bytes: pages of 20 MiB in the large pool and
//! 2 MiB in the small one, mapped as needed and unmapped by `empty_cache()`.

use super::*;

fn expandable(cap: u64) -> Allocator<TestStore> {
    alloc(AllocatorConfig {
        expandable_segments: true,
        ..with_capacity(cap)
    })
}

#[test]
fn a_segment_grows_by_whole_pages_and_empty_cache_unmaps_them() {
    let mut a = expandable(1024 * MIB);
    a.start_trace();
    // 30 MiB needs two 20 MiB pages; the 10 MiB left over is a free block.
    let x = a.malloc(30 * MIB, "x").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (30 * MIB, 40 * MIB));
    // 25 MiB: the free 10 MiB plus one more page, right after x.
    let y = a.malloc(25 * MIB, "y").unwrap();
    assert_eq!(y.0, x.0 + 30 * MIB);
    assert_eq!((a.allocated(), a.reserved()), (55 * MIB, 60 * MIB));
    // One segment of 60 MiB, counted as PyTorch counts it: no `segment` stat, one device
    // allocation per mapping, no inactive-split blocks.
    assert_eq!(a.segment_sizes(), vec![60 * MIB]);
    let s = a.stats();
    assert_eq!((s.segment.all.current, s.num_device_alloc), (0, 2));
    assert_eq!(s.inactive_split.all.current, 0);
    a.free(x).unwrap();
    a.free(y).unwrap();
    assert_eq!(a.largest_free_block(), 60 * MIB);
    a.empty_cache();
    assert_eq!((a.reserved(), a.stats().num_device_free), (0, 1));
    assert!(a.segment_sizes().is_empty());
    let kinds: Vec<_> = a
        .take_trace()
        .events
        .iter()
        .map(|e| (e.kind, e.size))
        .collect();
    use EventKind::*;
    assert_eq!(
        kinds,
        vec![
            (SegmentMap, 40 * MIB),
            (Alloc, 30 * MIB),
            (SegmentMap, 20 * MIB),
            (Alloc, 25 * MIB),
            (Free, 30 * MIB),
            (Free, 25 * MIB),
            (SegmentUnmap, 60 * MIB),
        ]
    );
}

#[test]
fn small_requests_map_two_mebibyte_pages() {
    let mut a = expandable(1024 * MIB);
    a.malloc(1, "x").unwrap();
    assert_eq!((a.allocated(), a.reserved()), (512, 2 * MIB));
    assert_eq!(a.stats().reserved_bytes.small_pool.current, 2 * MIB);
}

/// A 60 MiB tensor freed, a 30 MiB one cut from its block, then 35 and 45 MiB: the pattern
/// that strands a free 30 MiB sliver in an ordinary segment.
fn sliver(a: &mut Allocator<TestStore>) -> Result<BlockAddr, AllocError> {
    let t1 = a.malloc(60 * MIB, "t1")?;
    a.free(t1)?;
    let _t2 = a.malloc(30 * MIB, "t2")?;
    let t3 = a.malloc(35 * MIB, "t3")?;
    a.free(t3)?;
    a.malloc(45 * MIB, "t4")
}

#[test]
fn expandable_segments_fit_what_a_fragmented_cache_refuses() {
    // Ordinary segments: 60 MiB (30 MiB of it a free, split sliver) + a new 46 MiB segment
    // is more than the 100 MiB card, and the sliver cannot be given back.
    let mut plain = alloc(with_capacity(100 * MIB));
    let e = oom(sliver(&mut plain));
    assert_eq!(
        (e.allocated, e.reserved, e.tried),
        (30 * MIB, 60 * MIB, 46 * MIB)
    );
    // Expandable: t3 maps one page after the sliver, and t4 fits in the 50 MiB they make.
    let mut grown = expandable(100 * MIB);
    sliver(&mut grown).unwrap();
    assert_eq!((grown.allocated(), grown.reserved()), (75 * MIB, 80 * MIB));
}

#[test]
fn unmapped_pages_in_the_middle_are_mapped_again_first() {
    let mut a = expandable(1024 * MIB);
    let x = a.malloc(40 * MIB, "x").unwrap();
    let _y = a.malloc(20 * MIB, "y").unwrap();
    a.free(x).unwrap();
    // x's two pages go back; y stays mapped after the hole.
    a.empty_cache();
    assert_eq!(a.reserved(), 20 * MIB);
    assert_eq!(a.segment_sizes(), vec![20 * MIB]);
    // The lowest address with room is the hole: z lands where x was.
    let z = a.malloc(30 * MIB, "z").unwrap();
    assert_eq!(z.0, x.0);
    assert_eq!(a.reserved(), 60 * MIB);
    assert_eq!(a.segment_sizes(), vec![60 * MIB]);
}

#[test]
fn mapping_past_the_card_is_out_of_memory() {
    let mut a = expandable(100 * MIB);
    a.malloc(90 * MIB, "x").unwrap();
    assert_eq!(a.reserved(), 100 * MIB);
    let e = oom(a.malloc(20 * MIB, "y"));
    assert_eq!((e.reserved, e.free), (100 * MIB, Some(0)));
}

#[test]
fn a_snapshot_lists_each_mapped_range_as_a_segment() {
    let mut a = expandable(1024 * MIB);
    let x = a.malloc(40 * MIB, "x").unwrap();
    let y = a.malloc(20 * MIB, "y").unwrap();
    let _z = a.malloc(20 * MIB, "z").unwrap();
    a.free(y).unwrap();
    a.empty_cache();
    // y's page is unmapped: x's pages and z's page are two ranges, as PyTorch reports them.
    let segs = a.segments();
    let sizes: Vec<_> = segs.iter().map(|s| (s.addr - x.0, s.size)).collect();
    assert_eq!(sizes, vec![(0, 40 * MIB), (60 * MIB, 20 * MIB)]);
    assert!(segs.iter().all(|s| s.expandable && s.blocks.len() == 1));
    assert_eq!(a.reserved(), 60 * MIB);
}
