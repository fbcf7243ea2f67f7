//! The dispatches of one block of C (one cut of M × one cut of N): its reduction pieces,
//! each by the first kernel that fits it, and the rounding pass of a k accumulator.

use super::call::Call;
use super::params::{ACCUMULATE, BIAS, Params, Piece, Stores};
use super::{MatmulKernel, NAIVE, SKINNY};
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::Bind;
use crate::record::{Dispatch, grid};
use crate::shader::{Layout, Store};

/// Rows and columns of the block: `(m0, m1)` of M, `(n0, n1)` of N.
pub(super) type Block = ((u64, u64), (u64, u64));

impl Kernels {
    /// Appends the dispatches of `block` to `out`; `kacc` and `partial` are the call's
    /// scratch buffers, if it needs them.
    pub(super) fn block_dispatches<'a>(
        &'a self,
        out: &mut Vec<Dispatch<'a>>,
        call: &Call<'a>,
        ((m0, m1), (n0, n1)): Block,
        kacc: Option<&'a wgpu::Buffer>,
        partial: Option<&'a wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        let (mp, np) = (m1 - m0, n1 - n0);
        let g = &call.g;
        let bc = call.c.bind(m0, m1);
        let bbias = call.bias.as_ref().map(|o| o.bind(0, 1));
        let to_c = Piece {
            m: mp,
            n: np,
            k: call.k,
            a: 0,
            b: 0,
            c: bc.elem() + n0,
            c_stride: g.c.cols,
            bias: bbias.as_ref().map_or(0, |x| x.elem()) + n0,
            flags: if g.accumulate { ACCUMULATE } else { 0 }
                | if bbias.is_some() { BIAS } else { 0 },
        };
        // Where the reduction pieces go: C, or the k accumulator.
        let acc_buffer = kacc.filter(|_| call.kacc_fits(self, mp, np));
        let (target, target_stores) = match acc_buffer {
            Some(buffer) => (
                Bind::Direct {
                    buffer,
                    offset: 0,
                    size: (mp * np * call.stores.compute.size()).next_multiple_of(32),
                    elem: 0,
                    quads: true,
                },
                call.stores.writing_scratch(),
            ),
            None => (bc.clone(), call.stores),
        };
        for (ki, &(k0, k1)) in call.ksegs.iter().enumerate() {
            let ba = if g.trans_a {
                call.a.bind(k0, k1)
            } else {
                call.a.bind(m0, m1)
            };
            let bb = if g.trans_b {
                call.b.bind(n0, n1)
            } else {
                call.b.bind(k0, k1)
            };
            let later = if ki > 0 { ACCUMULATE } else { 0 };
            let (c_at, c_stride, flags, bbias) = match acc_buffer {
                Some(_) => (0, np, later, None),
                None => (
                    to_c.c,
                    to_c.c_stride,
                    if ki > 0 {
                        later | (to_c.flags & !BIAS)
                    } else {
                        to_c.flags
                    },
                    bbias.clone(),
                ),
            };
            let piece = Piece {
                k: k1 - k0,
                a: ba.elem() + if g.trans_a { m0 } else { k0 },
                b: bb.elem() + if g.trans_b { k0 } else { n0 },
                c: c_at,
                c_stride,
                flags,
                ..to_c
            };
            let binds = [
                ba,
                bb,
                target.clone(),
                bbias.unwrap_or_else(|| self.dummy_bind()),
            ];
            self.piece_dispatches(out, call, &piece, &target_stores, binds, partial)?;
        }
        if acc_buffer.is_some() {
            let c_binds = [target, bc, bbias.unwrap_or_else(|| self.dummy_bind())];
            out.push(self.kacc_sum(call, &to_c, c_binds)?);
        }
        Ok(())
    }

    /// C (+)= the sums in the k accumulator (+ bias), rounded once; `binds` are the
    /// accumulator, C and the bias.
    fn kacc_sum<'a>(
        &'a self,
        call: &Call<'a>,
        to_c: &Piece,
        [acc, bc, bbias]: [Bind<'a>; 3],
    ) -> Result<Dispatch<'a>, KernelError> {
        let stores = call.stores;
        let params = Params {
            splits: 1,
            ..general_params(to_c, call)
        };
        let (mp, np) = (to_c.m, to_c.n);
        // Column pairs per row, or words when rows of a packed C straddle them.
        let (entry, units) = if stores.c == Store::F16Packed
            && (!to_c.c.is_multiple_of(2) || !to_c.c_stride.is_multiple_of(2))
        {
            (
                "mm_sum_words",
                ((mp - 1) * to_c.c_stride + np).div_ceil(2) + 1,
            )
        } else {
            ("mm_sum", np.div_ceil(2) * mp)
        };
        let storage = vec![acc, self.dummy_bind(), bc, bbias];
        Ok(Dispatch {
            pipeline: self.pipeline_for("mm-skinny", entry, &stores.summing(), SKINNY, &storage)?,
            layout: &self.layouts.storage4.0,
            storage,
            writes: 1 << 2,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: grid(units.div_ceil(64), self.limits.max_workgroups),
        })
    }

    /// The dispatches of one piece: the first kernel that fits it.
    fn piece_dispatches<'a>(
        &'a self,
        out: &mut Vec<Dispatch<'a>>,
        call: &Call<'a>,
        piece: &Piece,
        stores: &Stores,
        binds: [Bind<'a>; 4],
        partial: Option<&'a wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        // A packed float16 C is written by word owners: the skinny kernels need every row
        // of C to start on a word.
        let words_ok = stores.c != Store::F16Packed
            || (piece.c.is_multiple_of(2) && piece.c_stride.is_multiple_of(2));
        let skinny = self
            .skinny(
                call.kernel,
                piece.m,
                piece.n,
                piece.k,
                stores.compute.size(),
            )
            .filter(|_| words_ok);
        if let Some(which) = skinny {
            return self.skinny_dispatches(out, which, piece, call, stores, binds, partial);
        }
        match self.tiled_form(call, piece) {
            Some(form) if piece.k >= 4 => {
                let tail = piece.k % 4;
                let head = Piece {
                    k: piece.k - tail,
                    ..*piece
                };
                out.push(self.tiled(form, &head, call, stores, binds.clone())?);
                if tail > 0 {
                    out.push(self.naive(&k_tail(piece, call), call, stores, binds)?);
                }
            }
            _ => out.push(self.naive(piece, call, stores, binds)?),
        }
        Ok(())
    }

    /// The tiled kernel's entry point, if it may compute `piece`: offsets, strides and n
    /// multiples of 4, not both operands transposed.
    fn tiled_form(&self, call: &Call<'_>, piece: &Piece) -> Option<&'static str> {
        let g = &call.g;
        call.form().filter(|_| {
            call.kernel == MatmulKernel::Auto
                && [piece.a, piece.b, piece.c, piece.n]
                    .iter()
                    .all(|x| x % 4 == 0)
                && [g.a.cols, g.b.cols, piece.c_stride]
                    .iter()
                    .all(|x| x % 4 == 0)
        })
    }

    /// The pipeline of `entry`, its bindings declared as quads when every binding of
    /// `binds` holds whole quads.
    pub(super) fn pipeline_for(
        &self,
        family: &str,
        entry: &str,
        stores: &Stores,
        body: &str,
        binds: &[Bind<'_>],
    ) -> Result<wgpu::ComputePipeline, KernelError> {
        let layout = if binds.iter().all(Bind::quads) {
            Layout::Quads
        } else {
            Layout::Scalar
        };
        let key = format!("{family}/{layout:?}/{}", stores.key());
        self.cache.get(
            &self.device,
            &self.layouts.storage4.1,
            &key,
            entry,
            &[],
            || stores.source(body, layout),
        )
    }

    fn naive<'a>(
        &'a self,
        p: &Piece,
        call: &Call<'a>,
        stores: &Stores,
        storage: [Bind<'a>; 4],
    ) -> Result<Dispatch<'a>, KernelError> {
        let params = general_params(p, call);
        let max = self.limits.max_workgroups;
        let (entry, groups) = if stores.c == Store::F16Packed {
            let span = (p.m - 1) * p.c_stride + p.n;
            ("mm_naive_words", grid(span.div_ceil(2).div_ceil(64), max))
        } else {
            let max = u64::from(max);
            (
                "mm_naive",
                [
                    p.n.div_ceil(8).min(max) as u32,
                    p.m.div_ceil(8).min(max) as u32,
                    1,
                ],
            )
        };
        Ok(Dispatch {
            pipeline: self.pipeline_for("mm-naive", entry, stores, NAIVE, &storage)?,
            layout: &self.layouts.storage4.0,
            storage: storage.into(),
            writes: 1 << 2,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups,
        })
    }
}

/// The last `k % 4` reductions of `piece`, which the naive kernel adds (no bias).
fn k_tail(piece: &Piece, call: &Call<'_>) -> Piece {
    let g = &call.g;
    let tail = piece.k % 4;
    let kt = piece.k - tail;
    Piece {
        k: tail,
        a: piece.a + kt * if g.trans_a { g.a.cols } else { 1 },
        b: piece.b + kt * if g.trans_b { 1 } else { g.b.cols },
        flags: ACCUMULATE,
        ..*piece
    }
}

/// Element strides of a piece for the naive and skinny kernels.
pub(super) fn general_params(p: &Piece, call: &Call<'_>) -> Params {
    let g = &call.g;
    let (a_rs, a_cs) = if g.trans_a {
        (1, g.a.cols)
    } else {
        (g.a.cols, 1)
    };
    let (b_rs, b_cs) = if g.trans_b {
        (1, g.b.cols)
    } else {
        (g.b.cols, 1)
    };
    Params {
        m: p.m as u32,
        n: p.n as u32,
        k: p.k as u32,
        flags: p.flags,
        a_off: p.a as u32,
        a_rs: a_rs as u32,
        a_cs: a_cs as u32,
        b_off: p.b as u32,
        b_rs: b_rs as u32,
        b_cs: b_cs as u32,
        c_off: p.c as u32,
        c_stride: p.c_stride as u32,
        bias_off: p.bias as u32,
        splits: 1,
        kc: p.k as u32,
        split_stride: 0,
    }
}
