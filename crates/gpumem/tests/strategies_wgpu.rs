//! The memory-saving strategies on wgpu against the cpu reference (float32 only: the float16
//! and float64 kernels are not on wgpu yet).
//!
//! Gradient accumulation is the case that once failed here: an upload went onto the queue
//! while the previous micro-batch's kernels still waited in the pending encoder, and wgpu ran
//! the upload first. Uploads now submit what is recorded before writing.

use gpumem::data::{Dataset, Split};
use gpumem::mlp::{Batch, Checkpointing, Mlp, MlpConfig, Optimizer, Precision, Strategy};
use gpumem::testing::{TestGpu, gpu};
use gpumem::{Device, MemorySpec};

fn strategy(accumulation: u64, checkpointing: Checkpointing) -> Strategy {
    Strategy {
        precision: Precision::Float32,
        accumulation,
        checkpointing,
    }
}

/// Relative error against the cpu, with small entries measured against 1 % of the largest.
fn max_rel(got: &[f32], want: &[f32]) -> f32 {
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / w.abs().max(0.01 * scale).max(f32::MIN_POSITIVE))
        .fold(0.0, f32::max)
}

/// One step of `config` on cpu and on wgpu from the same weights: loss, rows classified
/// correctly, and every gradient must agree.
fn agrees_with_cpu(gpu: &TestGpu, config: &MlpConfig, data: &Split) {
    let cpu = Device::cpu(1 << 30);
    let wgpu = gpu.device(MemorySpec::Bytes(1 << 30));
    let mut on_cpu = Mlp::new(&cpu, config, 3).unwrap();
    let mut on_gpu = Mlp::new(&wgpu, config, 3).unwrap();
    let rc = on_cpu.train_step(Batch::Data(data)).unwrap();
    let rg = on_gpu.train_step(Batch::Data(data)).unwrap();
    let what = format!("{:?}", config.strategy);
    let (lc, lg) = (rc.loss.unwrap(), rg.loss.unwrap());
    assert!(
        (lc - lg).abs() <= 1e-4 * lc.abs(),
        "{what}: loss cpu {lc}, wgpu {lg}"
    );
    assert_eq!(rc.correct, rg.correct, "{what}: rows classified correctly");
    assert_eq!(rc.recomputed_layers, rg.recomputed_layers, "{what}");
    for (l, (g, c)) in on_gpu
        .gradients()
        .iter()
        .zip(on_cpu.gradients())
        .enumerate()
    {
        for (name, gt, ct) in [("weight", &g.weight, &c.weight), ("bias", &g.bias, &c.bias)] {
            let err = max_rel(&gt.read().unwrap(), &ct.read().unwrap());
            assert!(err <= 1e-3, "{what}: layer{l}.{name}.grad off by {err}");
        }
    }
}

fn config(strategy: Strategy) -> MlpConfig {
    MlpConfig::lesson(16)
        .with_layers(4)
        .with_optimizer(Optimizer::Sgd { lr: 0.1 })
        .with_strategy(strategy)
}

#[test]
fn checkpointing_on_wgpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(40, 5).train;
    for ck in [
        Checkpointing::Every(2),
        Checkpointing::Every(3),
        Checkpointing::Sqrt,
    ] {
        agrees_with_cpu(&gpu, &config(strategy(1, ck)), &data);
    }
}

#[test]
fn accumulation_on_wgpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(40, 5).train;
    for k in [2, 3] {
        agrees_with_cpu(&gpu, &config(strategy(k, Checkpointing::Off)), &data);
        agrees_with_cpu(&gpu, &config(strategy(k, Checkpointing::Every(2))), &data);
    }
}
