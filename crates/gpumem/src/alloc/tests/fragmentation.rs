//! When the out-of-memory message calls the cache fragmented, in hand-computed bytes.

use super::*;

/// Eight 512 KiB blocks fill a 4 MiB card's two 2 MiB small segments; three freed apart
/// leave 1.50 MiB cached in pieces. A 1 MiB request fits none of them and tries a new
/// 2 MiB segment: the cache holds less than that, so the message must not say it holds
/// more than the request.
#[test]
fn a_cache_smaller_than_what_was_tried_is_not_called_fragmented() {
    let mut a = alloc(with_capacity(4 * MIB));
    let blocks: Vec<BlockAddr> = (0..8)
        .map(|i| a.malloc(512 * KIB, &format!("b{i}")).unwrap())
        .collect();
    for &i in &[0, 2, 4] {
        a.free(blocks[i]).unwrap();
    }
    let e = oom(a.malloc(MIB, "x"));
    assert_eq!(
        (e.requested, e.tried, e.cached_unused()),
        (MIB, 2 * MIB, 3 * 512 * KIB)
    );
    assert!(!e.is_fragmentation());
    assert!(!e.to_string().contains("cached but"), "{e}");
}
