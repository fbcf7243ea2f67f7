fn quads(off: u32, n: u32) -> u32 {
    if (n == 0u) { return 0u; }
    return ((off + n - 1u) >> 2u) - (off >> 2u) + 1u;
}
fn quad(off: u32, n: u32, u: u32) -> vec2<u32> {
    let q = (off >> 2u) + u;
    let first = max(4u * q, off);
    let last = min(4u * q + 3u, off + n - 1u);
    return vec2<u32>(first - off, last - first + 1u);
}
