//! How far the reference solution's `card_bytes` is from the engine, per scheme: the
//! measurement behind the grader's `TOLERANCE`. Prints the worst case of each graded scheme
//! over random setups (drawn as the grader draws them) and the lesson's.
//!
//! `cargo run -p grading --example calibrate_challenge5`

#[path = "../../../solutions/challenge5/answer.rs"]
#[allow(dead_code)]
mod solution;

use grading::challenge5::{Scheme, calibration_setups, measured_peak};
use std::collections::BTreeMap;

const SEEDS: [u64; 6] = [1, 7, 99, 2026, 5, 11];
const CARDS: [u64; 5] = [1, 2, 3, 4, 8];

fn main() {
    let mut worst: BTreeMap<&str, (f64, String)> = BTreeMap::new();
    for seed in SEEDS {
        for setup in calibration_setups(seed, 25) {
            for scheme in Scheme::ALL.into_iter().filter(|s| s.pipeline().is_none()) {
                for n in CARDS {
                    let want = measured_peak(setup, scheme, n);
                    let got = solution::card_bytes(setup, scheme, n);
                    let off = got as f64 / want as f64 - 1.0;
                    let w = worst.entry(scheme.name()).or_default();
                    if off.abs() > w.0.abs() {
                        *w = (
                            off,
                            format!("{setup}, {n} cards: engine {want}, solution {got}"),
                        );
                    }
                }
            }
        }
    }
    for (scheme, (off, case)) in worst {
        println!("{scheme:16} {:+6.1} %  {case}", off * 100.0);
    }
}
