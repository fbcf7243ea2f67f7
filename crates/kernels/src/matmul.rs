//! `C (+)= op(A)·op(B) (+ bias)` — forward `Z = A·W` (NN), `dW = Aᵀ·dZ` (TN) and
//! `dA = dZ·Wᵀ` (NT).
//!
//! # The fast kernel, and what limits it on lavapipe
//!
//! `matmul/tiled_subgroup.wgsl` is a register-tiled kernel: a workgroup of `WG` invocations
//! owns 32 rows × 8·`WG` columns of C, each invocation accumulates 32×8 values in 64 vec4
//! registers, loads A and B as vec4s (C too, so every offset, stride and n must be a
//! multiple of 4) and has no bounds checks in its k loop (loads clamp, stores mask). The workgroup shares its 32 rows of A: lane q of a subgroup loads rows
//! q, q+8, q+16, q+24 and every lane gets the rest by `subgroupBroadcast` with constant
//! lane ids. Without `Features::SUBGROUP` every invocation loads all 32
//! (`tiled_plain.wgsl`). No workgroup memory, no barriers. Both files are generated
//! (`tools/gen_tiled.py`): straight-line code, one variable per accumulator.
//!
//! Measured on lavapipe (llvmpipe 15, AVX2: one "SIMD group" = 8 invocations, 2 cores;
//! numbers swing ±50% with the other load on this shared machine):
//! * llvmpipe turns every storage-buffer load whose address is not a compile-time
//!   uniform into a loop over the 8 lanes with a bounds check and a branch per
//!   component: a vec4 load costs about as much as 30 FMAs. The game is FMAs per loaded
//!   value: naive 0.1 GFLOP/s, 4×4 per invocation ~1, this tile without subgroups ~3,
//!   with them ~5–8 per busy core.
//! * Workgroup memory is no cheaper (the same per-lane loop) and barriers are emulated
//!   with coroutines: shared-memory tiling loses (0.16 GFLOP/s in PLATFORM-NOTES).
//! * The subgroup broadcast cuts the vec4 loads per k step of 4 from 40 to 12 (4 of A,
//!   8 of B): about 2× over the plain tile.
//! * Accumulators do not fit the 16 ymm registers and live on the stack either way;
//!   32×16 and 64×8 tiles measured no faster and compile 4× slower. Compile time matters
//!   (llvmpipe compiles at first dispatch): arrays of accumulators or loops over them
//!   cost 3–10×, and so did an unrolled epilogue, hence the generated straight-line k loop
//!   and an epilogue that stores row 0 and shifts the rows up, in a loop: ~1 CPU-second
//!   per form instead of ~5, at the same speed.
//! * What stays expensive is B: 8 loads per k step, different in every lane, and in NN/TN
//!   each k row of B is a new page (NT, which walks B along its rows, is often fastest).
//!
//! On hardware GPUs the same kernel is a reasonable, untuned choice: 64 vec4 accumulators
//! per invocation is at the register budget (a 16×8 tile would be the first thing to try),
//! `WG` follows the subgroup size. Split-K for TN with few output tiles is not done:
//! pieces of a long batch run one after another, accumulating into C.
//!
//! # Pieces
//!
//! Each operand is cut along its own row dimension (M for C and untransposed A, K for
//! transposed A and untransposed B, N for transposed B), and the dispatches are the
//! product of the cuts; reduction pieces after the first accumulate into C. Pieces the
//! tiled kernel cannot take (offsets, strides or n not multiples of 4, k < 4, both
//! operands transposed) go to `matmul/naive.wgsl`; a k tail (k % 4) is added by it.

use crate::pieces::{Bind, Operand, segments};
use crate::record::{Dispatch, record};
use crate::view::{DType, Matrix};
use crate::{KernelError, KernelLimits, Kernels, Layouts, expect_dtype, pipelines};

/// One matmul call: `c (+)= op(a)·op(b) (+ bias)`.
#[derive(Clone, Copy, Debug)]
pub struct Gemm<'a> {
    pub a: Matrix<'a>,
    /// Use `aᵀ` (a is stored K×M).
    pub trans_a: bool,
    pub b: Matrix<'a>,
    /// Use `bᵀ` (b is stored N×K).
    pub trans_b: bool,
    /// M×N output.
    pub c: Matrix<'a>,
    /// `c += …` instead of `c = …`.
    pub accumulate: bool,
    /// N values added to every row of C (once, not per reduction piece).
    pub bias: Option<Matrix<'a>>,
}

/// Which kernel to use (the bench compares them; the engine leaves it on `Auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatmulKernel {
    /// The tiled kernel wherever it applies, naive elsewhere.
    #[default]
    Auto,
    /// One output per invocation everywhere.
    Naive,
}

pub(crate) struct Pipelines {
    naive: wgpu::ComputePipeline,
    /// NN, TN, NT.
    tiled: Vec<wgpu::ComputePipeline>,
    pub subgroups: bool,
    /// Invocations per workgroup of the tiled kernel.
    wg: u32,
}

const NAIVE: &str = include_str!("matmul/naive.wgsl");
const TILED_SUBGROUP: &str = include_str!("matmul/tiled_subgroup.wgsl");
const TILED_PLAIN: &str = include_str!("matmul/tiled_plain.wgsl");

/// Rows of C per tile of the tiled kernel, and vec4 columns per invocation.
const TILE_M: u64 = 64;
const COLS_PER_INVOCATION: u64 = 8;

impl Pipelines {
    /// Whether the subgroup variant applies (it may still fail to build, then plain).
    pub fn wants_subgroups(device: &wgpu::Device, limits: &KernelLimits) -> bool {
        limits.subgroups
            && device.features().contains(wgpu::Features::SUBGROUP)
            && device.adapter_info().subgroup_min_size >= 8
    }

    pub fn new(
        device: &wgpu::Device,
        layouts: &Layouts,
        limits: &KernelLimits,
    ) -> Result<Self, KernelError> {
        let layout = &layouts.storage4.1;
        let naive = pipelines(device, "matmul naive", NAIVE, layout, &["mm_naive"], &[])?.remove(0);
        let info = device.adapter_info();
        // A workgroup as wide as a subgroup (8 on llvmpipe, 32/64 on GPUs), at least 8.
        let wg = info.subgroup_max_size.clamp(8, 64).next_power_of_two();
        let constants = [("WG", f64::from(wg))];
        let entries = ["mm_nn", "mm_tn", "mm_nt"];
        if Self::wants_subgroups(device, limits) {
            if let Ok(tiled) = pipelines(
                device,
                "matmul tiled subgroup",
                TILED_SUBGROUP,
                layout,
                &entries,
                &constants,
            ) {
                return Ok(Pipelines {
                    naive,
                    tiled,
                    subgroups: true,
                    wg,
                });
            }
        }
        let tiled = pipelines(
            device,
            "matmul tiled",
            TILED_PLAIN,
            layout,
            &entries,
            &constants,
        )?;
        Ok(Pipelines {
            naive,
            tiled,
            subgroups: false,
            wg,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
    flags: u32,
    a_off: u32,
    a_rs: u32,
    a_cs: u32,
    b_off: u32,
    b_rs: u32,
    b_cs: u32,
    c_off: u32,
    c_stride: u32,
    bias_off: u32,
    pad: [u32; 3],
}

const ACCUMULATE: u32 = 1;
const BIAS: u32 = 2;

/// Sizes of one dispatch and where each operand starts inside its binding (elements).
struct Piece {
    m: u64,
    n: u64,
    k: u64,
    a: u64,
    b: u64,
    c: u64,
    bias: u64,
    flags: u32,
}

impl Kernels {
    /// Records `g.c (+)= op(g.a)·op(g.b) (+ g.bias)` into `encoder`.
    pub fn matmul(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        g: &Gemm<'_>,
    ) -> Result<(), KernelError> {
        self.matmul_with(encoder, g, MatmulKernel::Auto)
    }

    /// [`Kernels::matmul`] with a chosen kernel.
    pub fn matmul_with(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        g: &Gemm<'_>,
        kernel: MatmulKernel,
    ) -> Result<(), KernelError> {
        for (name, m) in [("a", &g.a), ("b", &g.b), ("c", &g.c)] {
            expect_dtype(name, m, DType::F32)?;
        }
        let (m, k) = if g.trans_a {
            (g.a.cols, g.a.rows)
        } else {
            (g.a.rows, g.a.cols)
        };
        let (kb, n) = if g.trans_b {
            (g.b.cols, g.b.rows)
        } else {
            (g.b.rows, g.b.cols)
        };
        if k != kb || g.c.rows != m || g.c.cols != n {
            return Err(KernelError::Shape(format!(
                "matmul: op(a) is {m}x{k}, op(b) is {kb}x{n}, c is {}x{}",
                g.c.rows, g.c.cols
            )));
        }
        let bias = match &g.bias {
            Some(bias) => {
                expect_dtype("bias", bias, DType::F32)?;
                if bias.len() != n {
                    return Err(KernelError::Shape(format!(
                        "matmul: bias has {} values, c has {n} columns",
                        bias.len()
                    )));
                }
                Some(Matrix {
                    rows: 1,
                    cols: n,
                    ..*bias
                })
            }
            None => None,
        };
        let lim = &self.limits;
        let a = Operand::new("a", &g.a, lim, 4)?;
        let b = Operand::new("b", &g.b, lim, 4)?;
        let c = Operand::new("c", &g.c, lim, 4)?;
        let bias = bias.map(|m| Operand::new("bias", &m, lim, 1)).transpose()?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        if k == 0 {
            if bias.is_some() {
                return Err(KernelError::Unsupported(
                    "matmul with k = 0 and a bias".into(),
                ));
            }
            if !g.accumulate {
                for p in g.c.parts {
                    encoder.clear_buffer(p.buffer, p.offset, Some(p.len));
                }
            }
            return Ok(());
        }

        let (a_on_m, a_on_k) = if g.trans_a {
            (None, Some(&a))
        } else {
            (Some(&a), None)
        };
        let (b_on_k, b_on_n) = if g.trans_b {
            (None, Some(&b))
        } else {
            (Some(&b), None)
        };
        let msegs = segments(
            m,
            &[Some(&c), a_on_m].into_iter().flatten().collect::<Vec<_>>(),
        );
        let ksegs = segments(
            k,
            &[a_on_k, b_on_k].into_iter().flatten().collect::<Vec<_>>(),
        );
        let nsegs = segments(n, &b_on_n.into_iter().collect::<Vec<_>>());

        let form = match (g.trans_a, g.trans_b) {
            (false, false) => Some(0),
            (true, false) => Some(1),
            (false, true) => Some(2),
            (true, true) => None,
        };
        let mut dispatches = Vec::new();
        for &(m0, m1) in &msegs {
            for &(n0, n1) in &nsegs {
                for (ki, &(k0, k1)) in ksegs.iter().enumerate() {
                    let ba = if g.trans_a {
                        a.bind(k0, k1)
                    } else {
                        a.bind(m0, m1)
                    };
                    let bb = if g.trans_b {
                        b.bind(n0, n1)
                    } else {
                        b.bind(k0, k1)
                    };
                    let bc = c.bind(m0, m1);
                    let bbias = bias.as_ref().map(|o| o.bind(0, 1));
                    let piece = Piece {
                        m: m1 - m0,
                        n: n1 - n0,
                        k: k1 - k0,
                        a: ba.elem() + if g.trans_a { m0 } else { k0 },
                        b: bb.elem() + if g.trans_b { k0 } else { n0 },
                        c: bc.elem() + n0,
                        bias: bbias.as_ref().map_or(0, |x| x.elem()) + n0,
                        flags: if g.accumulate || ki > 0 {
                            ACCUMULATE
                        } else {
                            0
                        } | if bbias.is_some() && ki == 0 { BIAS } else { 0 },
                    };
                    let binds = [ba, bb, bc, bbias.unwrap_or_else(|| self.dummy_bind())];
                    let tiled = form.filter(|_| {
                        kernel == MatmulKernel::Auto
                            && [piece.a, piece.b, piece.c, piece.n]
                                .iter()
                                .all(|x| x % 4 == 0)
                            && [g.a.cols, g.b.cols, g.c.cols].iter().all(|x| x % 4 == 0)
                    });
                    match tiled {
                        Some(form) if piece.k >= 4 => {
                            let tail = piece.k % 4;
                            let head = Piece {
                                k: piece.k - tail,
                                ..piece
                            };
                            dispatches.push(self.tiled(form, &head, g, binds.clone()));
                            if tail > 0 {
                                // The last k % 4 reductions, added by the naive kernel.
                                let kt = piece.k - tail;
                                let rest = Piece {
                                    k: tail,
                                    a: piece.a + kt * if g.trans_a { g.a.cols } else { 1 },
                                    b: piece.b + kt * if g.trans_b { 1 } else { g.b.cols },
                                    flags: ACCUMULATE,
                                    ..piece
                                };
                                dispatches.push(self.naive(&rest, g, binds));
                            }
                        }
                        _ => dispatches.push(self.naive(&piece, g, binds)),
                    }
                }
            }
        }
        record(self, encoder, &dispatches);
        Ok(())
    }

    fn naive<'a>(&'a self, p: &Piece, g: &Gemm<'_>, storage: [Bind<'a>; 4]) -> Dispatch<'a> {
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
        let params = Params {
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
            c_stride: g.c.cols as u32,
            bias_off: p.bias as u32,
            pad: [0; 3],
        };
        let max = self.limits.max_workgroups;
        Dispatch {
            pipeline: &self.matmul.naive,
            layout: &self.layouts.storage4.0,
            storage: storage.into(),
            writes: 1 << 2,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: [
                p.n.div_ceil(8).min(u64::from(max)) as u32,
                p.m.div_ceil(8).min(u64::from(max)) as u32,
                1,
            ],
        }
    }

    fn tiled<'a>(
        &'a self,
        form: usize,
        p: &Piece,
        g: &Gemm<'_>,
        storage: [Bind<'a>; 4],
    ) -> Dispatch<'a> {
        let params = Params {
            m: p.m as u32,
            n: p.n as u32,
            k: p.k as u32,
            flags: p.flags,
            a_off: (p.a / 4) as u32,
            a_rs: (g.a.cols / 4) as u32,
            b_off: (p.b / 4) as u32,
            b_rs: (g.b.cols / 4) as u32,
            c_off: (p.c / 4) as u32,
            c_stride: (g.c.cols / 4) as u32,
            bias_off: p.bias as u32,
            ..Params::default()
        };
        let max = u64::from(self.limits.max_workgroups);
        let tile_n = COLS_PER_INVOCATION * u64::from(self.matmul.wg);
        Dispatch {
            pipeline: &self.matmul.tiled[form],
            layout: &self.layouts.storage4.0,
            storage: storage.into(),
            writes: 1 << 2,
            params: bytemuck::bytes_of(&params).to_vec(),
            groups: [
                p.n.div_ceil(tile_n).min(max) as u32,
                p.m.div_ceil(TILE_M).min(max) as u32,
                1,
            ],
        }
    }
}
