//! The CPU side of the matmul tables: `matrixmultiply::sgemm`, one thread or all.

use std::time::Instant;

use crate::testing::Rng;

/// `matrixmultiply::sgemm` on one shape and form, rows of C split between threads.
pub(super) struct Cpu {
    shape: (usize, usize, usize),
    trans: (bool, bool),
    pub cores: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    /// Calls per sample, so a sample takes ≥ ~0.05 s.
    reps: usize,
}

impl Cpu {
    pub fn new(shape: (usize, usize, usize), trans: (bool, bool), cores: usize) -> Cpu {
        let (m, k, n) = shape;
        let mut rng = Rng::new(7);
        let mut cpu = Cpu {
            shape,
            trans,
            cores,
            a: rng.vec(m * k),
            b: rng.vec(k * n),
            c: vec![0.0; m * n],
            reps: 1,
        };
        let t = cpu.sample(1);
        cpu.reps = (0.05 / t).ceil().clamp(1.0, 1000.0) as usize;
        cpu
    }

    /// Seconds per sgemm.
    pub fn sample(&mut self, threads: usize) -> f64 {
        let (m, k, n) = self.shape;
        // Strides of op(A) (m×k) and op(B) (k×n) in their stored row-major layouts.
        let (rsa, csa) = if self.trans.0 { (1, m) } else { (k, 1) };
        let (rsb, csb) = if self.trans.1 { (1, k) } else { (n, 1) };
        let rows = m.div_ceil(threads).max(1);
        let t = Instant::now();
        for _ in 0..self.reps {
            std::thread::scope(|s| {
                for (i, chunk) in self.c.chunks_mut(rows * n).enumerate() {
                    let (a, b) = (&self.a[i * rows * rsa..], &self.b);
                    let mc = chunk.len() / n;
                    s.spawn(move || {
                        // SAFETY: a holds op(A)'s rows from i·rows on (≥ mc rows of k at
                        // these strides), b is k×n at its strides, chunk is mc×n, and the
                        // slices outlive the call.
                        unsafe {
                            matrixmultiply::sgemm(
                                mc,
                                k,
                                n,
                                1.0,
                                a.as_ptr(),
                                rsa as isize,
                                csa as isize,
                                b.as_ptr(),
                                rsb as isize,
                                csb as isize,
                                0.0,
                                chunk.as_mut_ptr(),
                                n as isize,
                                1,
                            )
                        }
                    });
                }
            });
        }
        t.elapsed().as_secs_f64() / self.reps as f64
    }
}
