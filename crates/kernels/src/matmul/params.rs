//! What one matmul dispatch is told: the uniform `Params`, the piece it computes, and the
//! storage of each operand.

use crate::shader::{Compute, Layout, Store, prelude};

/// The uniform of every matmul kernel (`Params` in each .wgsl file and in `tiled.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Params {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub flags: u32,
    pub a_off: u32,
    pub a_rs: u32,
    pub a_cs: u32,
    pub b_off: u32,
    pub b_rs: u32,
    pub b_cs: u32,
    pub c_off: u32,
    pub c_stride: u32,
    pub bias_off: u32,
    /// Skinny kernels: split-k chunks, values per chunk, elements between partials.
    pub splits: u32,
    pub kc: u32,
    pub split_stride: u32,
}

/// `Params::flags`: add into C.
pub(super) const ACCUMULATE: u32 = 1;
/// `Params::flags`: add the bias.
pub(super) const BIAS: u32 = 2;
/// `Params::flags`, skinny kernels: the streamed operand is quad-aligned (vec4 loads and
/// stores).
pub(super) const VEC: u32 = 4;

/// Sizes of one dispatch and where each operand starts inside its binding (elements).
#[derive(Clone, Copy)]
pub(super) struct Piece {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub a: u64,
    pub b: u64,
    pub c: u64,
    /// Row stride of the C the piece writes (C's columns, or a k accumulator's).
    pub c_stride: u64,
    pub bias: u64,
    pub flags: u32,
}

/// The storage of each operand of one call.
#[derive(Clone, Copy)]
pub(super) struct Stores {
    pub a: Store,
    pub b: Store,
    pub c: Store,
    /// The bias's, or the compute type's when there is none (so calls with and without a
    /// bias share pipelines).
    pub bias: Store,
    pub compute: Compute,
}

impl Stores {
    /// The stores of a call whose bias (if any) is stored as `bias`.
    pub fn new(a: Store, b: Store, c: Store, bias: Option<Store>) -> Stores {
        let compute = Compute::of(&[a, b, c, bias.unwrap_or(Store::F32)]);
        Stores {
            a,
            b,
            c,
            bias: bias.unwrap_or(compute.store()),
            compute,
        }
    }

    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.a.tag(),
            self.b.tag(),
            self.c.tag(),
            self.bias.tag()
        )
    }

    /// The WGSL of a hand-written matmul `body` for these stores, declared as `layout`.
    pub fn source(&self, body: &str, layout: Layout) -> String {
        let mut s = prelude(
            self.compute,
            &[
                ("a", self.a),
                ("b", self.b),
                ("c", self.c),
                ("bias", self.bias),
            ],
            layout,
        );
        s.push_str(body);
        s
    }

    /// The store of scratch values in the compute type.
    pub fn scratch(&self) -> Store {
        self.compute.store()
    }

    /// These stores with scratch values (the compute type) in A and B: what a pass that
    /// sums partial results into C reads.
    pub fn summing(&self) -> Stores {
        Stores {
            a: self.scratch(),
            b: self.scratch(),
            ..*self
        }
    }

    /// These stores with a scratch C: what a pass writing partial results writes.
    pub fn writing_scratch(&self) -> Stores {
        Stores {
            c: self.scratch(),
            ..*self
        }
    }
}

/// Which skinny kernel, if any, and its split count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Skinny {
    K,
    N(u64),
    M(u64),
}
