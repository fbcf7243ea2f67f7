//! The lesson's data, rebuilt synthetically: simulated collision events, signal or
//! background, described by two features — the transverse momenta (pT) of the two leading
//! leptons — standardised to zero mean and unit variance.
//!
//! The lesson trained on a real physics data set that we do not ship. What matters for
//! memory is its shape: two float32 features per event and as many events as the lesson's
//! out-of-memory message implies. That message tried to allocate 8.74 GiB for one
//! activation of N × 2000 float32 (8000 bytes a row), so N ≈ 8.74 GiB / 8000 B ≈ 1.17 million
//! training events: [`LESSON_TRAINING_EVENTS`].
//!
//! How an event is made (all from one seed, so every run sees the same events):
//! - signal (label 1) with probability 1/2: leading pT = 25 GeV + Gamma(shape 3, scale 20),
//!   a harder spectrum, as from the decay of a heavy particle;
//! - background (label 0): leading pT = 25 GeV + Gamma(shape 1.5, scale 18);
//! - subleading pT = leading pT × Beta(2, 2) (signal) or × Beta(1.2, 2.5) (background), so it
//!   is always the smaller of the two;
//! - both features are standardised with the training set's mean and standard deviation.
//!
//! The classes overlap, so no classifier is perfect; a small MLP reaches roughly 70–75 %
//! validation accuracy where always guessing one class gets 50 %.

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Distribution, Gamma};

// ANCHOR: lesson_events
/// Training events implied by the lesson's 8.74 GiB full-batch activation at width 2000.
pub const LESSON_TRAINING_EVENTS: u64 = 1_173_000;
// ANCHOR_END: lesson_events

/// Features per event.
pub const FEATURES: u64 = 2;

/// Classes: background (0) and signal (1).
pub const CLASSES: u64 = 2;

/// One split (training or validation): row-major features and labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// `len × FEATURES` standardised features.
    pub x: Vec<f32>,
    pub y: Vec<u32>,
}

impl Split {
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The rows at `indices`, gathered into a new split (one mini-batch).
    pub fn gather(&self, indices: &[usize]) -> Split {
        let f = FEATURES as usize;
        let mut x = Vec::with_capacity(indices.len() * f);
        for &i in indices {
            x.extend_from_slice(&self.x[i * f..(i + 1) * f]);
        }
        Split {
            x,
            y: indices.iter().map(|&i| self.y[i]).collect(),
        }
    }
}

/// The synthetic data set: a training split and a held-out validation split.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub train: Split,
    pub validation: Split,
    /// Mean and standard deviation of each raw feature over the training split (GeV).
    pub mean: [f64; 2],
    pub std: [f64; 2],
}

fn event(rng: &mut ChaCha8Rng, dists: &Dists) -> ([f64; 2], u32) {
    let signal = rng.random_bool(0.5);
    let (lead, ratio) = if signal {
        (dists.sig_lead.sample(rng), dists.sig_ratio.sample(rng))
    } else {
        (dists.bkg_lead.sample(rng), dists.bkg_ratio.sample(rng))
    };
    let lead = 25.0 + lead;
    ([lead, lead * ratio], u32::from(signal))
}

struct Dists {
    sig_lead: Gamma<f64>,
    bkg_lead: Gamma<f64>,
    sig_ratio: Beta<f64>,
    bkg_ratio: Beta<f64>,
}

impl Dataset {
    /// `train` training events and `train / 4` validation events (an 80/20 split) from
    /// `seed`.
    pub fn generate(train: u64, seed: u64) -> Dataset {
        let dists = Dists {
            sig_lead: Gamma::new(3.0, 20.0).expect("valid gamma"),
            bkg_lead: Gamma::new(1.5, 18.0).expect("valid gamma"),
            sig_ratio: Beta::new(2.0, 2.0).expect("valid beta"),
            bkg_ratio: Beta::new(1.2, 2.5).expect("valid beta"),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut raw = |n: u64| -> (Vec<[f64; 2]>, Vec<u32>) {
            (0..n).map(|_| event(&mut rng, &dists)).unzip()
        };
        let (train_raw, train_y) = raw(train);
        let (val_raw, val_y) = raw(train / 4);
        let n = train_raw.len().max(1) as f64;
        let mut mean = [0.0; 2];
        let mut std = [0.0; 2];
        for j in 0..2 {
            mean[j] = train_raw.iter().map(|e| e[j]).sum::<f64>() / n;
            let var = train_raw
                .iter()
                .map(|e| (e[j] - mean[j]).powi(2))
                .sum::<f64>()
                / n;
            std[j] = var.sqrt().max(1e-12);
        }
        let standardise = |rows: &[[f64; 2]]| -> Vec<f32> {
            rows.iter()
                .flat_map(|e| (0..2).map(move |j| ((e[j] - mean[j]) / std[j]) as f32))
                .collect()
        };
        Dataset {
            train: Split {
                x: standardise(&train_raw),
                y: train_y,
            },
            validation: Split {
                x: standardise(&val_raw),
                y: val_y,
            },
            mean,
            std,
        }
    }
}

/// Shuffled mini-batches of row indices for one epoch; the last batch may be short.
pub fn epoch_batches(rows: usize, batch: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..rows).collect();
    order.shuffle(rng);
    order.chunks(batch.max(1)).map(<[usize]>::to_vec).collect()
}

/// The generator for shuffling and weight initialisation, from a seed.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_standardised_and_split_80_20() {
        let a = Dataset::generate(4000, 7);
        assert_eq!(a, Dataset::generate(4000, 7));
        assert_ne!(a, Dataset::generate(4000, 8));
        assert_eq!((a.train.len(), a.validation.len()), (4000, 1000));
        for j in 0..2 {
            let col: Vec<f64> = a
                .train
                .x
                .iter()
                .skip(j)
                .step_by(2)
                .map(|&v| v as f64)
                .collect();
            let mean = col.iter().sum::<f64>() / col.len() as f64;
            let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / col.len() as f64;
            assert!(
                mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
                "feature {j}: {mean} {var}"
            );
        }
        let signal = a.train.y.iter().filter(|&&y| y == 1).count();
        assert!((1800..2200).contains(&signal), "{signal}");
        // The leading lepton is the harder one.
        let raw_lead = |i: usize| a.train.x[2 * i] as f64 * a.std[0] + a.mean[0];
        let raw_sub = |i: usize| a.train.x[2 * i + 1] as f64 * a.std[1] + a.mean[1];
        assert!((0..4000).all(|i| raw_sub(i) <= raw_lead(i) + 1e-3));
    }

    #[test]
    fn signal_is_harder_than_background() {
        let d = Dataset::generate(20_000, 1);
        let mean_lead = |label: u32| {
            let v: Vec<f32> = (0..d.train.len())
                .filter(|&i| d.train.y[i] == label)
                .map(|i| d.train.x[2 * i])
                .collect();
            v.iter().sum::<f32>() / v.len() as f32
        };
        assert!(mean_lead(1) > mean_lead(0) + 0.5);
    }

    #[test]
    fn batches_cover_every_row_once() {
        let mut r = rng(3);
        let b = epoch_batches(103, 10, &mut r);
        assert_eq!(b.len(), 11);
        assert_eq!(b.last().unwrap().len(), 3);
        let mut all: Vec<usize> = b.concat();
        all.sort_unstable();
        assert_eq!(all, (0..103).collect::<Vec<_>>());
    }

    #[test]
    fn gather_picks_rows() {
        let d = Dataset::generate(10, 2);
        let g = d.train.gather(&[3, 1]);
        assert_eq!(
            g.x,
            [d.train.x[6], d.train.x[7], d.train.x[2], d.train.x[3]]
        );
        assert_eq!(g.y, [d.train.y[3], d.train.y[1]]);
    }
}
