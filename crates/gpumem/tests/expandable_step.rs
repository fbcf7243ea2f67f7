//! Training with `expandable_segments`: tensors cross page boundaries (one wgpu buffer per
//! page; one host allocation that grows), and the numbers must not change.

use gpumem::alloc::AllocatorConfig;
use gpumem::data::Dataset;
use gpumem::device::{Backend, DeviceOptions};
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::testing::gpu;
use gpumem::{Device, MemorySpec};

fn options(backend: Backend, expandable: bool) -> DeviceOptions {
    DeviceOptions {
        backend,
        memory: MemorySpec::Bytes(1 << 30),
        allocator: AllocatorConfig {
            expandable_segments: expandable,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Three steps: the losses and the final weights of every layer.
fn train(dev: &Device) -> (Vec<f32>, Vec<Vec<f32>>) {
    let data = Dataset::generate(2000, 7).train;
    // 4 MB activations: several of them straddle 20 MiB pages.
    let config = MlpConfig::lesson(500)
        .with_layers(2)
        .with_optimizer(Optimizer::adam(0.01));
    let mut mlp = Mlp::new(dev, &config, 11).unwrap();
    let losses = (0..3)
        .map(|_| mlp.train_step(Batch::Data(&data)).unwrap().loss.unwrap())
        .collect();
    let weights = mlp
        .layers()
        .iter()
        .map(|l| l.weight.read().unwrap())
        .collect();
    (losses, weights)
}

#[test]
fn the_cpu_backing_trains_the_same_numbers_with_expandable_segments() {
    let plain = Device::new(&options(Backend::Cpu, false)).unwrap();
    let grown = Device::new(&options(Backend::Cpu, true)).unwrap();
    let (a, b) = (train(&plain), train(&grown));
    // Several pages were mapped one after another while live tensors sat in the first.
    assert!(grown.memory_stats().num_device_alloc > 1);
    assert_eq!(grown.memory_stats().segment.all.peak, 0);
    assert_eq!(
        a, b,
        "the same kernels on the same data must give identical bits"
    );
}

/// The largest difference between two runs' losses and between their weights.
fn largest_difference(a: &(Vec<f32>, Vec<Vec<f32>>), b: &(Vec<f32>, Vec<Vec<f32>>)) -> (f32, f32) {
    let most = |x: &[f32], y: &[f32]| {
        x.iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max)
    };
    let weights =
        a.1.iter()
            .zip(&b.1)
            .map(|(x, y)| most(x, y))
            .fold(0f32, f32::max);
    (most(&a.0, &b.0), weights)
}

#[test]
fn wgpu_trains_the_same_numbers_with_expandable_segments() {
    let Some(gpu) = gpu() else { return };
    let grown = gpu.device_with(&options(Backend::Wgpu, true));
    let plain = gpu.device_with(&options(Backend::Wgpu, false));
    let (a, b) = (train(&plain), train(&grown));
    assert!(grown.memory_stats().num_device_alloc > 1);
    // A tensor that straddles two page buffers is processed in two pieces, so sums may be
    // taken in another order: float32 rounding apart, the numbers are the same (measured
    // on lavapipe: losses equal, weights within 1e-8).
    let (losses, weights) = largest_difference(&a, &b);
    assert!(
        losses <= 1e-6 && weights <= 1e-6,
        "losses {losses}, weights {weights}"
    );
}
