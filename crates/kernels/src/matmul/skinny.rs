//! Dispatching the skinny kernels (`skinny.wgsl`): which one fits a piece, and split-k.

use super::block::general_params;
use super::call::Call;
use super::params::{Params, Piece, Skinny, Stores, VEC};
use super::{MatmulKernel, SKINNY};
use crate::error::KernelError;
use crate::kernels::Kernels;
use crate::pieces::Bind;
use crate::record::{Dispatch, grid};

/// Largest skinny dimension (the fused kernels' too: they unroll it).
pub(super) const SKINNY_MAX: u64 = 4;
/// Rows per invocation of `mm_smallk` (`SK_ROWS` in skinny.wgsl).
const SK_ROWS: u64 = 64;
/// Split-k: aim for this many invocations, with chunks of at least `MIN_CHUNK` values of
/// k and at most `MAX_SPLITS` chunks.
const SPLIT_TARGET: u64 = 8192;
/// The same on a CPU adapter (lavapipe), where each core runs one workgroup at a time and
/// every extra workgroup costs time of its own: one workgroup's worth where rows are few
/// (measured: `NOTES.md`, "Split-k on a CPU adapter").
const SPLIT_TARGET_CPU: u64 = 8;
const MIN_CHUNK: u64 = 64;
const MAX_SPLITS: u64 = 64;

/// How many invocations split-k aims for (see `SPLIT_TARGET_CPU`).
pub(crate) fn split_target(cpu_plans: bool) -> u64 {
    if cpu_plans {
        SPLIT_TARGET_CPU
    } else {
        SPLIT_TARGET
    }
}

/// One skinny dispatch before split-k: entry point, chunks of k, workgroups, and whether
/// the streamed operand is quad-aligned (`VEC`).
struct Plan {
    entry: &'static str,
    splits: u64,
    groups: [u64; 2],
    vec: bool,
}

impl Kernels {
    /// The skinny kernel for a piece, if one applies, with its split count.
    pub(super) fn skinny(
        &self,
        kernel: MatmulKernel,
        m: u64,
        n: u64,
        k: u64,
        tsize: u64,
    ) -> Option<Skinny> {
        if kernel != MatmulKernel::Auto {
            return None;
        }
        let splits = |invocations: u64| {
            let fit = self.limits.max_binding / (m * n * tsize).max(1);
            self.split_target
                .div_ceil(invocations.max(1))
                .min(k / MIN_CHUNK)
                .min(MAX_SPLITS)
                .min(fit)
                .max(1)
        };
        if k <= SKINNY_MAX {
            Some(Skinny::K)
        } else if n <= SKINNY_MAX {
            // As many splits as mm_smalln4 (4 rows an invocation) would want.
            Some(Skinny::N(splits(m.div_ceil(4))))
        } else if m <= SKINNY_MAX {
            Some(Skinny::M(splits(n.div_ceil(4))))
        } else {
            None
        }
    }

    /// Appends the dispatches of skinny kernel `which` for piece `p`: one, or with
    /// split-k, the partial sums into `partial` and their sum into C.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn skinny_dispatches<'a>(
        &'a self,
        out: &mut Vec<Dispatch<'a>>,
        which: Skinny,
        p: &Piece,
        call: &Call<'a>,
        stores: &Stores,
        storage: [Bind<'a>; 4],
        partial: Option<&'a wgpu::Buffer>,
    ) -> Result<(), KernelError> {
        let max = u64::from(self.limits.max_workgroups);
        let plan = plan(which, p, call);
        let mut params = general_params(p, call);
        if plan.vec {
            params.flags |= VEC;
        }
        let groups = [
            plan.groups[0].min(max) as u32,
            plan.groups[1].min(max) as u32,
            1,
        ];
        // Chunks of whole quads of k (the vec4 loop of mm_smalln steps by 4).
        let (splits, kc) = {
            let kc = p.k.div_ceil(plan.splits).next_multiple_of(4);
            (p.k.div_ceil(kc), kc)
        };
        params.kc = kc as u32;
        let Some(partial) = partial.filter(|_| splits > 1) else {
            out.push(Dispatch {
                pipeline: self.pipeline_for("mm-skinny", plan.entry, stores, SKINNY, &storage)?,
                layout: &self.layouts.storage4.0,
                storage: storage.into(),
                writes: 1 << 2,
                params: bytemuck::bytes_of(&params).to_vec(),
                groups,
            });
            return Ok(());
        };
        params.splits = splits as u32;
        params.split_stride = (p.m * p.n) as u32;
        self.split_k(out, plan.entry, p, stores, storage, partial, params, groups)
    }

    /// Split-k: partial sums `[split][m][n]` in the compute type, then their sum into C.
    #[allow(clippy::too_many_arguments)]
    fn split_k<'a>(
        &'a self,
        out: &mut Vec<Dispatch<'a>>,
        entry: &str,
        p: &Piece,
        stores: &Stores,
        [ba, bb, bc, bbias]: [Bind<'a>; 4],
        partial: &'a wgpu::Buffer,
        params: Params,
        groups: [u32; 3],
    ) -> Result<(), KernelError> {
        let scratch = Bind::Direct {
            buffer: partial,
            offset: 0,
            size: (u64::from(params.splits) * p.m * p.n * stores.compute.size())
                .next_multiple_of(32),
            elem: 0,
            quads: true,
        };
        let partial_params = Params {
            flags: params.flags & VEC,
            c_off: 0,
            c_stride: p.n as u32,
            ..params
        };
        let storage = vec![ba, bb, scratch.clone(), self.dummy_bind()];
        let partial_stores = stores.writing_scratch();
        out.push(Dispatch {
            pipeline: self.pipeline_for("mm-skinny", entry, &partial_stores, SKINNY, &storage)?,
            layout: &self.layouts.storage4.0,
            storage,
            writes: 1 << 2,
            params: bytemuck::bytes_of(&partial_params).to_vec(),
            groups,
        });
        let storage = vec![scratch, self.dummy_bind(), bc, bbias];
        let sum_params = Params {
            flags: params.flags & !VEC,
            ..params
        };
        out.push(Dispatch {
            pipeline: self.pipeline_for(
                "mm-skinny",
                "mm_sum",
                &stores.summing(),
                SKINNY,
                &storage,
            )?,
            layout: &self.layouts.storage4.0,
            storage,
            writes: 1 << 2,
            params: bytemuck::bytes_of(&sum_params).to_vec(),
            groups: grid(
                (p.n.div_ceil(2) * p.m).div_ceil(64),
                self.limits.max_workgroups,
            ),
        });
        Ok(())
    }
}

/// The entry point, split count, workgroups and `VEC` of skinny kernel `which` on `p`.
fn plan(which: Skinny, p: &Piece, call: &Call<'_>) -> Plan {
    let g = &call.g;
    let quad = |x: u64| x.is_multiple_of(4);
    let plan = |entry, splits, groups, vec| Plan {
        entry,
        splits,
        groups,
        vec,
    };
    // VEC (see skinny.wgsl): the operand each kernel streams is quad-aligned.
    match which {
        Skinny::K => plan(
            "mm_smallk",
            1,
            [p.n.div_ceil(4).div_ceil(64), p.m.div_ceil(SK_ROWS)],
            quad(p.c) && quad(p.c_stride),
        ),
        // A transposed with quad-aligned columns: four rows of C per invocation.
        Skinny::N(s) if g.trans_a && quad(p.a) && quad(g.a.cols) => {
            plan("mm_smalln4", s, [p.m.div_ceil(4).div_ceil(64), s], false)
        }
        Skinny::N(s) => plan(
            "mm_smalln",
            s,
            [p.m.div_ceil(64), s],
            !g.trans_a && quad(p.a) && quad(g.a.cols),
        ),
        Skinny::M(s) => plan(
            "mm_smallm",
            s,
            [p.n.div_ceil(4).div_ceil(64), s],
            !g.trans_b && quad(p.b) && quad(g.b.cols),
        ),
    }
}
