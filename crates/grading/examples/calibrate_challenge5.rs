//! How far the reference solution's `card_bytes` is from the engine, per scheme: the
//! measurement behind the grader's per-scheme tolerances ([`grading::challenge5::tolerance`]).
//! Prints, for each graded scheme, how many cases it matches to the byte, and its farthest
//! case below and above the engine, over the lesson's setups and random ones (drawn as the
//! grader draws them) for six seeds, on 1, 2, 3, 4 and 8 cards.
//!
//! `cargo run --release -p grading --example calibrate_challenge5`

#[path = "../../../solutions/challenge5/answer.rs"]
#[allow(dead_code)]
mod solution;

use grading::challenge5::{Scheme, calibration_setups, measured_peak, tolerance};

const SEEDS: [u64; 6] = [1, 7, 99, 2026, 5, 11];
const CARDS: [u64; 5] = [1, 2, 3, 4, 8];

#[derive(Default)]
struct Worst {
    cases: usize,
    exact: usize,
    below: (f64, String),
    above: (f64, String),
}

fn main() {
    let schemes: Vec<Scheme> = Scheme::ALL
        .into_iter()
        .filter(|s| s.pipeline().is_none())
        .collect();
    let mut worst: Vec<Worst> = schemes.iter().map(|_| Worst::default()).collect();
    for seed in SEEDS {
        for setup in calibration_setups(seed, 25) {
            for (&scheme, w) in schemes.iter().zip(&mut worst) {
                for n in CARDS {
                    let want = measured_peak(setup, scheme, n);
                    let got = solution::card_bytes(setup, scheme, n);
                    let off = got as f64 / want as f64 - 1.0;
                    let case = format!("{setup}, {n} cards: engine {want}, solution {got}");
                    w.cases += 1;
                    w.exact += usize::from(got == want);
                    if off < w.below.0 {
                        w.below = (off, case);
                    } else if off > w.above.0 {
                        w.above = (off, case);
                    }
                }
            }
        }
    }
    for (scheme, w) in schemes.into_iter().zip(worst) {
        println!(
            "{:16} tolerance {:.1} %: {}/{} to the byte",
            scheme.name(),
            tolerance(scheme) * 100.0,
            w.exact,
            w.cases
        );
        println!("  below {:+7.3} %  {}", w.below.0 * 100.0, w.below.1);
        println!("  above {:+7.3} %  {}", w.above.0 * 100.0, w.above.1);
    }
}
