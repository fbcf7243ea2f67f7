//! `Kernels::log_softmax_nll_loss` writes `logp`, the loss and `total_weight` with the bits
//! `log_softmax` then `nll_loss` write (whose values xent.rs checks against f64): in one
//! dispatch where it fuses (float32, a batch that is one piece of at most 256 rows, five
//! storage bindings), as the two kernels elsewhere. `Kernels::fill_nll_loss_backward`
//! likewise writes what `fill` then `nll_loss_backward` write (one dispatch for a float32
//! batch in one piece).

use gpumem_kernels::{Kernels, Matrix};

use crate::common::*;

/// (rows, classes, split over buffers): the lesson's batch at 32, one row of one class, many
/// classes, the largest fused batch and one row more, and a batch cut over buffers.
const CASES: [(usize, usize, bool); 8] = [
    (32, 2, false),
    (1, 1, false),
    (3, 2, false),
    (17, 10, false),
    (5, 150, false),
    (256, 3, false),
    (257, 3, false),
    (40, 2, true),
];

/// What one call wrote, as bits, and the dispatches it recorded.
#[derive(Debug, PartialEq)]
struct Written {
    logp: Vec<u32>,
    loss: u32,
    total_weight: u32,
    dispatches: u64,
}

impl Written {
    /// The bits of a row output and two scalars (the loss or the filled gradient, then
    /// `total_weight`).
    fn read(ctx: &Ctx, [rows, loss, tw]: [&Stored; 3], dispatches: u64) -> Written {
        let bits =
            |s: &Stored| -> Vec<u32> { s.read::<f32>(ctx).iter().map(|v| v.to_bits()).collect() };
        Written {
            logp: bits(rows),
            loss: bits(loss)[0],
            total_weight: bits(tw)[0],
            dispatches,
        }
    }
}

/// Runs `case` fused (`log_softmax_nll_loss`) or as the two kernels; row 4's label is out
/// of range (NaN) where `bad`.
fn run(ctx: &Ctx, k: &Kernels, case: (usize, usize, bool), bad: bool, fused: bool) -> Written {
    let (b, c, split) = case;
    let mut rng = rng(9000 + (b * c) as u64);
    let x: Vec<f32> = rng.vec(b * c).iter().map(|v| 6.0 * v - 3.0).collect();
    let mut y: Vec<i64> = (0..b)
        .map(|_| i64::from(rng.next_u32() % c as u32))
        .collect();
    if bad {
        y[4] = c as i64;
    }
    let row = 4 * c as u64;
    let cuts = |len: usize| {
        if split {
            awkward_cuts(4 * len as u64, row)
        } else {
            Vec::new()
        }
    };
    let sx = Stored::new(ctx, &x, &cuts(x.len()));
    let sp = Stored::new(ctx, &vec![0f32; b * c], &cuts(b * c));
    let sy = Stored::new(ctx, &y, &if split { vec![12] } else { Vec::new() });
    let (sloss, stw) = (
        Stored::new(ctx, &[0f32], &[]),
        Stored::new(ctx, &[0f32], &[]),
    );
    let (px, pp, py, ploss, ptw) = (
        sx.parts(),
        sp.parts(),
        sy.parts(),
        sloss.parts(),
        stw.parts(),
    );
    let (mx, mp) = (
        matrix(&px, b as u64, c as u64),
        matrix(&pp, b as u64, c as u64),
    );
    let my = Matrix::labels_i64(&py, b as u64);
    let (ml, mt) = (matrix(&ploss, 1, 1), matrix(&ptw, 1, 1));
    let before = k.counters().dispatches;
    ctx.run(|e| {
        if fused {
            k.log_softmax_nll_loss(e, &mx, &mp, &my, &ml, &mt)
                .expect("log_softmax_nll_loss");
        } else {
            k.log_softmax(e, &mx, &mp).expect("log_softmax");
            k.nll_loss(e, &mp, &my, &ml, &mt).expect("nll_loss");
        }
    });
    Written::read(ctx, [&sp, &sloss, &stw], k.counters().dispatches - before)
}

/// The fused call and the two kernels agree bit for bit (the dispatch counts aside).
fn same_bits(ctx: &Ctx, name: &str, k: &Kernels, case: (usize, usize, bool), bad: bool) -> u64 {
    let fused = run(ctx, k, case, bad, true);
    let separate = run(ctx, k, case, bad, false);
    let what = format!("{name} {case:?} bad label {bad}");
    assert_eq!(fused.logp, separate.logp, "{what}: logp");
    assert_eq!(
        fused.total_weight, separate.total_weight,
        "{what}: total_weight"
    );
    let loss = f32::from_bits(fused.loss);
    assert_eq!(loss.is_nan(), bad, "{what}: loss {loss}");
    if !bad {
        assert_eq!(fused.loss, separate.loss, "{what}: loss");
    }
    fused.dispatches
}

#[test]
fn fused_cross_entropy_writes_the_two_kernels_bits() {
    let Some(ctx) = ctx() else { return };
    for (name, k) in ctx.all() {
        for case in CASES {
            same_bits(ctx, name, k, case, false);
        }
        same_bits(ctx, name, k, CASES[3], true);
    }
}

/// Kernels of their own: the shared ones' counters see the other tests' dispatches.
#[test]
fn a_small_batch_is_one_dispatch() {
    let Some(ctx) = ctx() else { return };
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    for case in &CASES[..6] {
        assert_eq!(same_bits(ctx, "own", &own, *case, false), 1, "{case:?}");
    }
    for case in &CASES[6..] {
        assert!(same_bits(ctx, "own", &own, *case, false) >= 2, "{case:?}");
    }
}

/// WebGPU's downlevel limits bind four storage buffers per stage: there the two kernels run.
#[test]
fn downlevel_devices_run_the_two_kernels() {
    let Some(ctx) = downlevel_ctx() else { return };
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    assert!(same_bits(ctx, "downlevel", &own, CASES[0], false) >= 2);
}

/// What `fill_nll_loss_backward` (or `fill` then `nll_loss_backward`) wrote, as bits.
fn run_backward(
    ctx: &Ctx,
    k: &Kernels,
    (b, c, split): (usize, usize, bool),
    value: f32,
    fused: bool,
) -> Written {
    let mut rng = rng(9100 + (b * c) as u64);
    let mut y: Vec<i64> = (0..b)
        .map(|_| i64::from(rng.next_u32() % c as u32))
        .collect();
    // An out-of-range label: its row stays zeros.
    y[b / 2] = c as i64;
    let cuts = if split {
        awkward_cuts(4 * (b * c) as u64, 4 * c as u64)
    } else {
        Vec::new()
    };
    let so = Stored::new(ctx, &vec![7f32; b * c], &cuts);
    let sy = Stored::new(ctx, &y, &[]);
    let (sg, stw) = (
        Stored::new(ctx, &[0f32], &[]),
        Stored::new(ctx, &[b as f32], &[]),
    );
    let (po, py, pg, ptw) = (so.parts(), sy.parts(), sg.parts(), stw.parts());
    let (mo, my) = (
        matrix(&po, b as u64, c as u64),
        Matrix::labels_i64(&py, b as u64),
    );
    let (mg, mt) = (matrix(&pg, 1, 1), matrix(&ptw, 1, 1));
    let before = k.counters().dispatches;
    ctx.run(|e| {
        if fused {
            k.fill_nll_loss_backward(e, &mg, value, &my, &mt, &mo)
                .expect("fill_nll_loss_backward");
        } else {
            k.fill(e, &mg, f64::from(value)).expect("fill");
            k.nll_loss_backward(e, &mg, &my, &mt, &mo)
                .expect("nll_loss_backward");
        }
    });
    Written::read(ctx, [&so, &sg, &stw], k.counters().dispatches - before)
}

/// The fused call and the two kernels agree bit for bit; returns the fused dispatches.
fn same_backward(ctx: &Ctx, name: &str, k: &Kernels, case: (usize, usize, bool)) -> u64 {
    let mut dispatches = 0;
    for value in [1.0, 0.75] {
        let fused = run_backward(ctx, k, case, value, true);
        let separate = run_backward(ctx, k, case, value, false);
        let what = format!("{name} {case:?} fill {value}");
        assert_eq!(fused.logp, separate.logp, "{what}: nll_loss_backward");
        assert_eq!(fused.loss, value.to_bits(), "{what}: the filled gradient");
        assert_eq!(fused.loss, separate.loss, "{what}: the filled gradient");
        dispatches = fused.dispatches;
    }
    dispatches
}

/// (rows, classes, split): the lesson's batch, one row, many classes, a batch of 3001 rows
/// (one piece with the device's limits, pieces with the tiny ones), a batch over buffers.
const BACKWARD_CASES: [(usize, usize, bool); 5] = [
    (32, 2, false),
    (1, 1, false),
    (17, 10, false),
    (3001, 2, false),
    (40, 2, true),
];

#[test]
fn fused_fill_and_nll_loss_backward_write_the_two_kernels_bits() {
    let Some(ctx) = ctx() else { return };
    for (name, k) in ctx.all() {
        for case in BACKWARD_CASES {
            same_backward(ctx, name, k, case);
        }
    }
    let own = Kernels::new(&ctx.gpu.device).expect("kernels");
    for case in &BACKWARD_CASES[..4] {
        assert_eq!(same_backward(ctx, "own", &own, *case), 1, "{case:?}");
    }
    assert!(same_backward(ctx, "own", &own, BACKWARD_CASES[4]) >= 2);
}
