//! A group of cards on wgpu (several logical devices on one adapter) trains as the same
//! group does on the cpu backing, under every scheme.

use gpumem::data::Dataset;
use gpumem::mlp::{Batch, MlpConfig, Optimizer};
use gpumem::parallel::{Group, Scheme};
use gpumem::testing::gpu;
use gpumem::{Device, MemorySpec};

#[test]
fn every_scheme_on_wgpu_matches_the_cpu_backing() {
    let Some(gpu) = gpu() else { return };
    let config = MlpConfig::lesson(8)
        .with_layers(2)
        .with_optimizer(Optimizer::adam(0.01));
    let data = Dataset::generate(12, 5).train;
    for scheme in Scheme::ALL {
        let run = |devices: Vec<Device>| {
            let mut g = Group::new(&devices, &config, scheme, 5).unwrap();
            for _ in 0..2 {
                g.train_step(Batch::Data(&data)).unwrap();
            }
            g.parameters().unwrap()
        };
        let on_gpu = run((0..3)
            .map(|_| gpu.device(MemorySpec::Bytes(1 << 30)))
            .collect());
        let on_cpu = run((0..3).map(|_| Device::cpu(1 << 30)).collect());
        let gap = on_gpu
            .iter()
            .zip(&on_cpu)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(gap < 1e-4, "{scheme}: {gap}");
    }
}
