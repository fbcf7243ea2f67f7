//! Executed on the cpu backing: every scheme trains the same network as one card with the
//! whole batch (the batch split evenly), so its memory is that of a real algorithm.

use super::{Group, Scheme, measure_group};
use crate::data::Dataset;
use crate::device::{Backend, Device, DeviceOptions};
use crate::error::Error;
use crate::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use crate::size::MemorySpec;

const SEED: u64 = 3;

fn config(optimizer: Optimizer) -> MlpConfig {
    MlpConfig::lesson(6)
        .with_layers(2)
        .with_optimizer(optimizer)
}

fn cpu_devices(n: usize) -> Vec<Device> {
    (0..n).map(|_| Device::cpu(1 << 30)).collect()
}

/// The parameters after `steps` steps of one card on the whole batch.
fn one_card(config: &MlpConfig, rows: u64, steps: u32) -> Vec<f32> {
    let data = Dataset::generate(rows, SEED).train;
    let mut mlp = Mlp::new(&Device::cpu(1 << 30), config, SEED).unwrap();
    for _ in 0..steps {
        mlp.train_step(Batch::Data(&data)).unwrap();
    }
    mlp.layers()
        .iter()
        .flat_map(|l| l.tensors().map(|t| t.read::<f32>().unwrap()))
        .flatten()
        .collect()
}

fn group(config: &MlpConfig, scheme: Scheme, cards: usize, rows: u64, steps: u32) -> Group {
    let data = Dataset::generate(rows, SEED).train;
    let mut g = Group::new(&cpu_devices(cards), config, scheme, SEED).unwrap();
    for _ in 0..steps {
        g.train_step(Batch::Data(&data)).unwrap();
    }
    g
}

fn largest_gap(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn every_scheme_trains_as_one_card_does_when_the_batch_splits_evenly() {
    for optimizer in [Optimizer::sgd(0.5), Optimizer::adam(0.01)] {
        let config = config(optimizer);
        let start = one_card(&config, 24, 0);
        let alone = one_card(&config, 24, 2);
        assert!(
            largest_gap(&alone, &start) > 1e-3,
            "the steps move the weights"
        );
        for scheme in Scheme::ALL {
            // A pipeline gives each card at least one of the network's three layers.
            let most = if scheme.pipeline().is_some() { 3 } else { 4 };
            for cards in 1..=most {
                let g = group(&config, scheme, cards, 24, 2);
                let gap = largest_gap(&g.parameters().unwrap(), &alone);
                assert!(
                    gap < 2e-5,
                    "{scheme} on {cards} cards, {}: {gap}",
                    optimizer.name()
                );
            }
        }
    }
}

/// Each card averages its own rows, and DDP averages the cards: with 3 + 3 + 2 + 2 rows the
/// rows do not weigh the same, so the step is not the whole batch's.
#[test]
fn an_uneven_split_is_not_the_whole_batch() {
    let config = config(Optimizer::sgd(0.5));
    let alone = one_card(&config, 10, 1);
    let g = group(&config, Scheme::Ddp, 4, 10, 1);
    assert!(largest_gap(&g.parameters().unwrap(), &alone) > 1e-4);
}

#[test]
fn every_card_holds_the_same_network_after_a_step() {
    let config = config(Optimizer::adam(0.01));
    for scheme in [Scheme::Ddp, Scheme::DdpBucketView, Scheme::Zero1] {
        let g = group(&config, scheme, 3, 12, 2);
        let read = |i: usize| -> Vec<f32> {
            g.network(i)
                .layers()
                .iter()
                .flat_map(|l| l.tensors().map(|t| t.read::<f32>().unwrap()))
                .flatten()
                .collect()
        };
        for i in 1..3 {
            assert_eq!(read(i), read(0), "{scheme}: card {i}");
        }
    }
}

#[test]
fn a_card_that_runs_out_is_named() {
    let options = DeviceOptions {
        backend: Backend::Plan,
        memory: MemorySpec::Bytes(40 << 20),
        ..Default::default()
    };
    let config = MlpConfig::lesson(2000).with_layers(2);
    let m = measure_group(&options, &config, Scheme::Ddp, 4, 400_000, 0).unwrap();
    assert!(!m.fits());
    let first = &m.failures[0];
    let text = first.oom.to_string();
    assert!(
        text.contains(&format!("plan device {}", first.card)),
        "{text}"
    );
}

#[test]
fn impossible_groups_are_refused() {
    let config = config(Optimizer::sgd(0.1));
    let options = crate::lesson::planning_unlimited();
    let zero = measure_group(&options, &config, Scheme::Ddp, 0, 8, 0).unwrap_err();
    assert!(zero.to_string().contains("at least one card"), "{zero}");
    let rows = measure_group(&options, &config, Scheme::Zero3, 4, 3, 0).unwrap_err();
    assert!(matches!(rows, Error::Setup(_)), "{rows}");
    assert!(rows.to_string().contains("3 rows"), "{rows}");
}

#[test]
fn a_pipeline_needs_a_layer_per_card() {
    let config = config(Optimizer::sgd(0.1));
    let options = crate::lesson::planning_unlimited();
    let err = measure_group(&options, &config, Scheme::PipelineGpipe, 4, 64, 0).unwrap_err();
    assert!(err.to_string().contains("needs at least 4 layers"), "{err}");
    let fits = measure_group(&options, &config, Scheme::Pipeline1f1b, 3, 64, 0).unwrap();
    assert!(fits.fits());
}

/// GPipe keeps every micro-batch's activations on the first stage; 1F1B at most as many as
/// there are stages, so its first stage peaks lower once micro-batches outnumber stages.
#[test]
fn one_forward_one_backward_holds_fewer_micro_batches_than_gpipe() {
    let config = MlpConfig::lesson(256).with_layers(3);
    let options = crate::lesson::planning_unlimited();
    let peak = |scheme| {
        let m = measure_group(&options, &config, scheme, 2, 4096, 0).unwrap();
        m.cards[0].at_peak.activations
    };
    let (gpipe, one_f_one_b) = (peak(Scheme::PipelineGpipe), peak(Scheme::Pipeline1f1b));
    assert!(one_f_one_b < gpipe, "1F1B {one_f_one_b} B, GPipe {gpipe} B");
}

/// The schedule run in unit times idles `(n − 1) / (m + n − 1)` of the step under both
/// schedules; one stage never idles.
#[test]
fn the_bubble_is_the_textbook_share_of_the_step() {
    use super::{Schedule, bubble};
    for schedule in [Schedule::GPipe, Schedule::OneFOneB] {
        assert_eq!(bubble(schedule, 1, 4), 0.0);
        for (n, m) in [(2, 2), (2, 4), (4, 4), (4, 8), (8, 16)] {
            let want = (n - 1) as f64 / (m + n - 1) as f64;
            let got = bubble(schedule, n, m);
            assert!(
                (got - want).abs() < 1e-12,
                "{schedule:?} n {n} m {m}: {got} vs {want}"
            );
        }
    }
}
