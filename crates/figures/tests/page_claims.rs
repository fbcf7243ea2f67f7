//! The pages' sentences that are not generated numbers but claims about them: each test
//! names the page and keeps its words true if the engine's numbers move.

use figures::data::{self, LESSON_WIDTH, equation, measure};
use figures::pages::fitting_more::on_card;
use figures::tape;
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{CARD_BYTES, planning_device, planning_on_card, planning_unlimited};
use gpumem::mlp::{MlpConfig, Pass};

/// What lives in GPU memory: the step's tape equals PyTorch's, its peak comes in the
/// backward pass at `threshold_backward` with three batch × width tensors alive (the kept
/// activation, the gradient flowing back, the new one); the full batch's peak is about three
/// hidden activations; the equation is exact inside `is_exact`, within `band_margin`
/// outside, and its raw bytes equal the engine's everywhere; the engine equals PyTorch's
/// fixture but for Adam's step counts.
#[test]
fn memory_equation_page_claims() {
    let (engine, torch) = (tape::engine_step().unwrap(), tape::pytorch_step().unwrap());
    assert_eq!(engine.rows.len(), torch.rows.len());
    for (e, t) in engine.rows.iter().zip(&torch.rows) {
        assert_eq!(
            (e.bytes, e.live),
            (t.bytes, t.live),
            "{} / {}",
            e.made,
            t.made
        );
    }
    let peak = engine.peak().unwrap();
    assert_eq!(torch.peak(), Some(peak));
    assert_eq!(torch.rows[peak].op, "threshold_backward");
    let wide = tape::BATCH * tape::WIDTH * 4;
    let alive: Vec<&str> = engine
        .alive_at_peak
        .iter()
        .filter(|(_, b)| *b == wide)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(alive, ["a0", "a0.grad", "relu.grad"]);

    let config = MlpConfig::lesson(LESSON_WIDTH);
    let e = equation(&config, FULL).unwrap();
    let activation = FULL * LESSON_WIDTH * 4;
    let ratio = e.peak_allocated as f64 / activation as f64;
    assert!((2.95..3.05).contains(&ratio), "{ratio}");
    assert!(e.activations >= activation && e.activations < activation + (64 << 20));
    assert!(e.temporaries >= 2 * activation && e.temporaries < 2 * activation + (64 << 20));
    // Only the output layer's gradients exist at the busiest moment.
    assert!(e.gradients < e.parameters);

    for (c, batch) in gpumem::estimate::reference_setups() {
        let m = measure(&planning_unlimited(), &c, batch).unwrap();
        let predicted = equation(&c, batch).unwrap().peak_allocated;
        if gpumem::estimate::is_exact(&c, batch) {
            assert_eq!(predicted, m.peak_allocated);
        } else {
            assert!(predicted.abs_diff(m.peak_allocated) <= gpumem::estimate::band_margin(&c));
        }
        assert_eq!(
            gpumem::estimate::requested_peak(&c, batch).unwrap(),
            m.peak_requested
        );
    }
    let fixture = figures::pages::memory_equation::pytorch_fixture().unwrap();
    assert!(!fixture.contains("Different"), "{fixture}");
}

/// Mini-batching: each row costs about three hidden activations' worth (one kept, two at
/// the backward peak), and a step at batch 32 needs less than a megabyte.
#[test]
fn mini_batching_page_claims() {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let peak = |b| equation(&config, b).unwrap().peak_allocated;
    let per_row = (peak(100_000) - peak(50_000)) as f64 / 50_000.0;
    let three = (3 * LESSON_WIDTH * 4) as f64;
    assert!((per_row / three - 1.0).abs() < 0.01, "{per_row}");
    assert!(peak(32) < 1_000_000);
}

/// Challenge 1: the full batch runs out in the forward pass allocating `a0` while `z0` is
/// alive; it fits a 40 GiB card (`--device-memory 40GiB`); the largest batch that fits is
/// more than half the training set.
#[test]
fn challenge1_page_claims() {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let m = measure(&planning_on_card(), &config, FULL).unwrap();
    let oom = m.oom.unwrap();
    assert_eq!(
        (m.failed_in, oom.label.as_str()),
        (Some(Pass::Forward), "a0")
    );
    assert!(oom.allocated >= oom.requested);
    let big = measure(&planning_device(40 << 30), &config, FULL).unwrap();
    assert!(big.fits());
    let largest = data::largest_batch_on_card(LESSON_WIDTH).unwrap().unwrap();
    assert!(largest.rows > FULL / 2 && largest.rows < FULL);
}

/// Challenge 2: one layer too many runs out in the backward pass with SGD (a gradient) and
/// in the optimizer step with Adam (its square roots); about two and a half times as many
/// layers fit with SGD.
#[test]
fn challenge2_page_claims() {
    let sgd = data::deepest_fit(gpumem::mlp::Optimizer::LESSON).unwrap();
    let adam = data::deepest_fit(data::adam()).unwrap();
    assert_eq!(sgd.failed_in, Pass::Backward);
    assert!(sgd.oom.label.ends_with(".grad"), "{}", sgd.oom.label);
    assert_eq!(adam.failed_in, Pass::Optimizer);
    assert!(
        adam.oom.label.contains("_foreach_sqrt"),
        "{}",
        adam.oom.label
    );
    let ratio = sgd.layers as f64 / adam.layers as f64;
    assert!((2.3..2.7).contains(&ratio), "{ratio}");
}

/// Fitting more: `nn.ReLU(inplace=True)` keeps the peak, moves the full batch's failure from
/// the forward to the backward pass, and on the lesson's card fits a larger batch, because
/// without it the batch one row past the largest fails on a fragmented cache that the
/// in-place step never cuts.
#[test]
fn relu_inplace_claims() {
    let (plain, inplace) = (on_card(false).unwrap(), on_card(true).unwrap());
    assert_eq!(plain.full_peak, inplace.full_peak);
    for b in [32, 100_000, plain.largest] {
        let peak = |i| {
            measure(
                &planning_unlimited(),
                &figures::pages::fitting_more::lesson(i),
                b,
            )
            .unwrap()
            .peak_allocated
        };
        assert_eq!(peak(false), peak(true), "{b} rows");
    }
    assert_eq!(plain.failed_in, Pass::Forward.to_string());
    assert_eq!(inplace.failed_in, Pass::Backward.to_string());
    assert!(inplace.largest > plain.largest);
    assert!(inplace.largest_reserved <= CARD_BYTES);
    let next = figures::fragmented::fragmented_step(
        &figures::pages::fitting_more::lesson(false),
        plain.largest + 1,
    )
    .unwrap();
    assert!(next.is_some());
}
