//! The training step on wgpu (lavapipe in CI) against the cpu reference: same numbers,
//! same allocations, and errors as values.

use gpumem::alloc::Trace;
use gpumem::data::{Dataset, Split};
use gpumem::estimate::{estimate, reference_setups};
use gpumem::measure::measure_step_on;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::testing::gpu;
use gpumem::{Device, MemorySpec};

const CARD: MemorySpec = MemorySpec::Bytes(1 << 30);

/// Tolerance: relative error at most 1e-4; for entries below 1 % of the tensor's largest
/// magnitude, the error is measured against that 1 % instead (f32 sums over a batch in a
/// different order cancel differently on tiny values).
fn assert_close(name: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name}: lengths");
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let reference = w.abs().max(0.01 * scale).max(f32::MIN_POSITIVE);
        assert!(
            (g - w).abs() / reference <= 1e-4,
            "{name}[{i}]: wgpu {g} vs cpu {w} (scale {scale})"
        );
    }
}

fn compare_one_step(wgpu: &Device, config: &MlpConfig, data: &Split) {
    let cpu = Device::cpu(1 << 30);
    let mut on_cpu = Mlp::new(&cpu, config, 3).unwrap();
    let mut on_gpu = Mlp::new(wgpu, config, 3).unwrap();
    assert_close(
        "logits",
        &on_gpu.forward(data).unwrap(),
        &on_cpu.forward(data).unwrap(),
    );
    let rc = on_cpu.train_step(Batch::Data(data)).unwrap();
    let rg = on_gpu.train_step(Batch::Data(data)).unwrap();
    assert_close("loss", &[rg.loss.unwrap()], &[rc.loss.unwrap()]);
    assert_eq!(rg.correct, rc.correct);
    for (l, (g, c)) in on_gpu
        .gradients()
        .iter()
        .zip(on_cpu.gradients())
        .enumerate()
    {
        assert_close(
            &format!("layer{l}.weight.grad"),
            &g.weight.as_ref().unwrap().read().unwrap(),
            &c.weight.as_ref().unwrap().read().unwrap(),
        );
        assert_close(
            &format!("layer{l}.bias.grad"),
            &g.bias.as_ref().unwrap().read().unwrap(),
            &c.bias.as_ref().unwrap().read().unwrap(),
        );
    }
    for (l, (g, c)) in on_gpu.layers().iter().zip(on_cpu.layers()).enumerate() {
        assert_close(
            &format!("layer{l}.weight (updated)"),
            &g.weight.read().unwrap(),
            &c.weight.read().unwrap(),
        );
    }
}

#[test]
fn wgpu_matches_cpu_on_small_random_networks() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(67, 9).train;
    for (width, layers, adam) in [
        (1, 1, false),
        (7, 3, true),
        (33, 2, false),
        (64, 4, true),
        (130, 1, false),
    ] {
        let config = MlpConfig::lesson(width).with_layers(layers);
        let config = if adam {
            config.with_optimizer(Optimizer::adam(0.01))
        } else {
            config
        };
        compare_one_step(&gpu.device(CARD), &config, &data);
    }
}

#[test]
fn wgpu_matches_cpu_when_tensors_span_buffers_and_bindings() {
    let Some(gpu) = gpu() else { return };
    // 16 KiB buffers and 4 KiB bindings: every activation here spans several buffers and
    // is processed in pieces, some rows straddling two buffers.
    let dev = gpu.tight_device(CARD, 16 << 10, 4 << 10);
    let data = Dataset::generate(301, 4).train;
    compare_one_step(
        &dev,
        &MlpConfig::lesson(45)
            .with_layers(2)
            .with_optimizer(Optimizer::adam(0.01)),
        &data,
    );
}

#[test]
fn loss_decreases_on_wgpu_and_cpu() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(512, 2).train;
    let config = MlpConfig::lesson(32).with_optimizer(Optimizer::adam(0.02));
    for dev in [gpu.device(CARD), Device::cpu(1 << 30)] {
        let mut mlp = Mlp::new(&dev, &config, 5).unwrap();
        let first = mlp.train_step(Batch::Data(&data)).unwrap().loss.unwrap();
        let mut last = first;
        for _ in 0..30 {
            last = mlp.train_step(Batch::Data(&data)).unwrap().loss.unwrap();
        }
        assert!(
            last < 0.9 * first,
            "{:?}: {first} -> {last}",
            dev.info().backend
        );
    }
}

fn step_trace(dev: &Device, config: &MlpConfig, rows: u64) -> Trace {
    dev.start_trace();
    measure_step_on(dev, config, rows, 1).unwrap();
    dev.take_trace()
}

#[test]
fn one_step_allocates_the_same_on_every_backing() {
    let Some(gpu) = gpu() else { return };
    let adam = MlpConfig::lesson(300)
        .with_layers(3)
        .with_optimizer(Optimizer::adam(0.001));
    // Every strategy at once: autocast + GradScaler, three micro-batches (views of the
    // batch), checkpointed segments, the ReLU in place, SGD's momentum, gradients zeroed.
    let mut all = MlpConfig::lesson(64)
        .with_layers(5)
        .with_optimizer(Optimizer::Sgd {
            lr: 0.01,
            momentum: 0.9,
        });
    all.strategy = gpumem::mlp::Strategy {
        precision: gpumem::mlp::Precision::Mixed,
        accumulation: 3,
        checkpointing: gpumem::mlp::Checkpointing::Every(2),
        relu_inplace: true,
        zero_grad: gpumem::mlp::ZeroGrad::Zero,
        ..Default::default()
    };
    for config in [adam, all] {
        let plan = step_trace(&Device::plan(1 << 30), &config, 96);
        assert_eq!(plan, step_trace(&Device::cpu(1 << 30), &config, 96));
        assert_eq!(plan, step_trace(&gpu.device(CARD), &config, 96));
        assert!(plan.events.len() > 40);
    }
}

#[test]
fn the_equation_is_exact_on_wgpu() {
    let Some(gpu) = gpu() else { return };
    let small: Vec<_> = reference_setups()
        .into_iter()
        .filter(|(c, b)| c.parameter_count() <= 1 << 20 && b * c.hidden <= 1 << 20)
        .collect();
    assert!(small.len() >= 8, "{}", small.len());
    for (config, rows) in small {
        let dev = gpu.device(MemorySpec::Bytes(1 << 32));
        let m = measure_step_on(&dev, &config, rows, 0).unwrap();
        assert!(m.executed);
        assert_eq!(
            m.peak_allocated,
            estimate(&config, rows).unwrap().peak_allocated,
            "{config:?} {rows}"
        );
    }
}

#[test]
fn a_lost_device_is_an_error_not_a_panic() {
    let Some(gpu) = gpu() else { return };
    let dev = gpu.device(CARD);
    let data = Dataset::generate(32, 1).train;
    let mut mlp = Mlp::new(&dev, &MlpConfig::lesson(16), 0).unwrap();
    mlp.train_step(Batch::Data(&data)).unwrap();
    gpu.gpu().device.destroy();
    let e = mlp.train_step(Batch::Data(&data)).unwrap_err();
    assert!(e.to_string().contains("lost"), "{e}");
}
