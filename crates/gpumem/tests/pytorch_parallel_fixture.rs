//! The multi-card schemes against PyTorch's own: every setup of the committed fixtures
//! (`reference/pytorch/parallel_peaks.py`: DDP, DDP with bucket views, FSDP2 with and without
//! `reshard_after_forward`, and ZeRO-1; `reference/pytorch/pipeline_peaks.py`: every stage of
//! GPipe and 1F1B pipelines; all on PyTorch's fake process group, one card's raw tensor bytes
//! over two steps) planned on the engine. The card's peak of requested bytes must equal PyTorch's, less non-fused Adam's
//! `step` counts: 4-byte tensors PyTorch keeps on the CPU when the parameters are on a GPU,
//! which the fixture, made on the CPU, counts (one per parameter this card's optimizer
//! updates).

use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{MlpConfig, Optimizer, OptimizerImpl};
use gpumem::parallel::{Scheme, measure_group_with, stage_layers};
use gpumem::pytorch::{PARALLEL_FIXTURE, PIPELINE_FIXTURE, ParallelFixture, ParallelSetup};

/// The engine's scheme for the fixture's name.
fn scheme(name: &str) -> Scheme {
    match name {
        "ddp" => Scheme::Ddp,
        "ddp_view" => Scheme::DdpBucketView,
        "zero1" => Scheme::Zero1,
        "fsdp" => Scheme::Zero3,
        "fsdp_no_reshard" => Scheme::Zero2,
        "pipeline_gpipe" => Scheme::PipelineGpipe,
        "pipeline_1f1b" => Scheme::Pipeline1f1b,
        other => panic!("the fixture has a scheme the test does not know: {other}"),
    }
}

/// Adam's CPU step counts the fixture holds on this card.
fn cpu_steps(setup: &ParallelSetup, config: &MlpConfig, owned_params: usize) -> u64 {
    let foreach = matches!(
        config.strategy.optimizer_impl,
        OptimizerImpl::Foreach | OptimizerImpl::ForLoop
    );
    match (config.optimizer, foreach) {
        (Optimizer::Adam { .. }, true) => 4 * owned_params as u64,
        _ => {
            let _ = setup;
            0
        }
    }
}

/// The parameters card `rank` of `cards` updates under `scheme` (each has a CPU step count
/// under non-fused Adam).
fn updated_params(config: &MlpConfig, scheme: Scheme, cards: usize, rank: usize) -> usize {
    match scheme {
        Scheme::Zero1 => gpumem::parallel::zero1_owned(config, cards, rank),
        Scheme::PipelineGpipe | Scheme::Pipeline1f1b => {
            2 * stage_layers(config, cards).expect("the fixture's stages")[rank].len()
        }
        _ => 2 * (config.layers as usize + 1),
    }
}

/// Compares every card of `fixture` with the engine; returns how many it compared.
fn compare(path: &str, at_least: usize) -> usize {
    let fixture = ParallelFixture::load(std::path::Path::new(path)).unwrap();
    assert!(
        fixture.setups.len() >= at_least,
        "{} setups",
        fixture.setups.len()
    );
    let mut failures = Vec::new();
    let mut worst = (0.0f64, String::new());
    for setup in &fixture.setups {
        let config = setup.config().unwrap();
        let scheme = scheme(&setup.scheme);
        let m = measure_group_with(
            &planning_unlimited(),
            &config,
            scheme,
            setup.world_size,
            setup.batch,
            0,
            setup.micro_batches,
        )
        .unwrap();
        assert!(m.fits(), "{}: out of memory on unlimited cards", setup.name);
        let card = &m.cards[setup.rank];
        if let Some(rows) = setup.rows_on_rank {
            assert_eq!(card.rows, rows, "{}", setup.name);
        }
        let owned = updated_params(&config, scheme, setup.world_size, setup.rank);
        let pytorch =
            setup.peak_run_bytes.max(setup.construct_peak_bytes) - cpu_steps(setup, &config, owned);
        let engine = card.peak_requested;
        let diff = (engine as f64 - pytorch as f64) / pytorch as f64;
        if diff.abs() > worst.0 {
            worst = (diff.abs(), setup.name.clone());
        }
        if engine != pytorch {
            failures.push(format!(
                "{}: engine {engine} B, PyTorch {pytorch} B ({:+.4} %)",
                setup.name,
                100.0 * diff
            ));
        }
    }
    println!(
        "{path}: {} cards compared with PyTorch {}; worst relative difference {:.2e} ({})",
        fixture.setups.len(),
        fixture.torch_version,
        worst.0,
        worst.1
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    fixture.setups.len()
}

#[test]
fn every_data_parallel_and_sharded_card_spends_memory_as_pytorch_does() {
    compare(PARALLEL_FIXTURE, 80);
}

#[test]
fn every_pipeline_stage_spends_memory_as_pytorch_does() {
    compare(PIPELINE_FIXTURE, 90);
}
