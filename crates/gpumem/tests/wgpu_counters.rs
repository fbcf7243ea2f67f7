//! The wgpu backing's per-step work, from its counters: a steady training step is one
//! submission that creates no pipeline, bind group or buffer, and the bind group cache
//! lets go of a segment's buffers when the allocator releases it.

use gpumem::MemorySpec;
use gpumem::data::Dataset;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::testing::gpu;

const CARD: MemorySpec = MemorySpec::Bytes(1 << 30);

fn configs() -> [(&'static str, MlpConfig); 2] {
    [
        ("SGD", MlpConfig::lesson(200)),
        (
            "Adam",
            MlpConfig::lesson(200).with_optimizer(Optimizer::adam(1e-3)),
        ),
    ]
}

/// Steps after which the caching allocator hands out the same blocks every step (its free
/// lists settle over the first few), so every bind group is a cache hit.
const SETTLE: usize = 6;

#[test]
fn steady_steps_submit_once_and_create_nothing() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(32, 5).train;
    // On GL the cache keeps bind groups within one submission only (see `StepCache::new`).
    let reuses = gpu.gpu().info().backend != wgpu::Backend::Gl;
    for (name, config) in configs() {
        let device = gpu.device(CARD);
        let mut mlp = Mlp::new(&device, &config, 1).unwrap();
        let mut last = device.wgpu_counters().unwrap();
        for step in 1..=SETTLE + 3 {
            let result = mlp.train_step(Batch::Data(&data)).unwrap();
            assert!(result.loss.is_some_and(f32::is_finite), "{name}: loss");
            let now = device.wgpu_counters().unwrap();
            let c = now - last;
            last = now;
            if step == 1 {
                assert!(
                    c.bind_groups > 0 && c.pipelines > 0,
                    "{name}: first step {c:?}"
                );
                continue;
            }
            // Every step: one submission (its kernels and the loss's copy), one wait.
            assert_eq!(c.submits, 1, "{name} step {step}: submissions {c:?}");
            assert_eq!(c.read_backs, 1, "{name} step {step}: read-backs {c:?}");
            assert_eq!(c.pipelines, 0, "{name} step {step}: pipelines {c:?}");
            assert_eq!(c.buffers_created(), 0, "{name} step {step}: buffers {c:?}");
            assert!(c.dispatches > 0, "{name} step {step}: dispatches {c:?}");
            // x, y and the step's parameters: three writes.
            assert_eq!(c.buffer_writes, 3, "{name} step {step}: writes {c:?}");
            if reuses && step > SETTLE {
                assert_eq!(c.bind_groups, 0, "{name} step {step}: bind groups {c:?}");
            }
        }
    }
}

#[test]
fn cached_bind_groups_do_not_outlive_their_segments() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(32, 5).train;
    for (name, config) in configs() {
        let device = gpu.device(CARD);
        let mut mlp = Mlp::new(&device, &config, 1).unwrap();
        for _ in 0..3 {
            mlp.train_step(Batch::Data(&data)).unwrap();
        }
        if gpu.gpu().info().backend != wgpu::Backend::Gl {
            assert!(device.wgpu_cached_bind_groups().unwrap() > 0, "{name}");
        }
        drop(mlp);
        device.empty_cache();
        assert_eq!(
            device.memory_reserved(),
            0,
            "{name}: every segment released"
        );
        assert_eq!(
            device.wgpu_cached_bind_groups(),
            Some(0),
            "{name}: cache entries outlived their segments"
        );
    }
}

/// Timestamp queries, where the adapter has them, time every step's compute pass: a step
/// timed gives some device time in at least one pass; untimed devices report none.
#[test]
fn timed_kernels_report_the_devices_own_time() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(32, 5).train;
    let device = gpu.device(CARD);
    let mut mlp = Mlp::new(&device, &MlpConfig::lesson(200), 1).unwrap();
    mlp.train_step(Batch::Data(&data)).unwrap();
    assert_eq!(device.kernel_time(), None, "not timed until asked");
    if !device.time_kernels() {
        let has = gpu.gpu().device.features();
        assert!(!has.contains(wgpu::Features::TIMESTAMP_QUERY));
        return;
    }
    mlp.train_step(Batch::Data(&data)).unwrap();
    let t = device.kernel_time().unwrap();
    assert!(t.passes >= 1 && t.nanoseconds > 0.0, "{t:?}");
}

/// Profiling times each dispatch in a pass of its own and names it by its kernel: a step's
/// profile has every dispatch the counters saw, under the kernels the step runs.
#[test]
fn profiled_kernels_are_named_and_counted() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(32, 5).train;
    let device = gpu.device(CARD);
    let mut mlp = Mlp::new(&device, &MlpConfig::lesson(200), 1).unwrap();
    mlp.train_step(Batch::Data(&data)).unwrap();
    assert!(
        device.kernel_profile().is_empty(),
        "not profiled until asked"
    );
    if !device.profile_kernels() {
        return;
    }
    let before = device.wgpu_counters().unwrap();
    mlp.train_step(Batch::Data(&data)).unwrap();
    let step = device.wgpu_counters().unwrap() - before;
    let profile = device.kernel_profile();
    let dispatches: u64 = profile.iter().map(|s| s.dispatches).sum();
    assert_eq!(dispatches, step.dispatches, "{profile:?}");
    for kernel in ["log_softmax_backward", "threshold_backward", "sgd_foreach"] {
        assert!(
            profile
                .iter()
                .any(|s| s.kernel == kernel && s.nanoseconds > 0.0),
            "{kernel} in {profile:?}"
        );
    }
}

/// The step issues PyTorch's operations one at a time; the executor runs the pairs its
/// kernels have as one (a product and its ReLU, `log_softmax` and `nll_loss`, the seed of
/// ones and `nll_loss_backward`, Adam's step and its denominator): the profile of a step has
/// the joined kernels and none of their parts alone.
#[test]
fn the_executor_runs_the_pairs_its_kernels_have_as_one() {
    let Some(gpu) = gpu() else { return };
    let data = Dataset::generate(32, 5).train;
    for (name, config) in configs() {
        let device = gpu.device(CARD);
        let mut mlp = Mlp::new(&device, &config, 1).unwrap();
        mlp.train_step(Batch::Data(&data)).unwrap();
        if !device.profile_kernels() {
            return;
        }
        mlp.train_step(Batch::Data(&data)).unwrap();
        let ran: Vec<String> = device
            .kernel_profile()
            .into_iter()
            .map(|s| s.kernel)
            .collect();
        let has = |k: &str| ran.iter().any(|r| r == k);
        let mut joined = vec![
            "mm_smallk_relu",
            "log_softmax_nll_loss",
            "fill_nll_loss_backward",
        ];
        let mut alone = vec!["relu", "log_softmax", "nll_mean", "fill"];
        if name == "Adam" {
            joined.push("adam_with_denom");
            alone.extend(["adam", "adam_denom"]);
        }
        for k in joined {
            assert!(has(k), "{name}: {k} not in {ran:?}");
        }
        for k in alone {
            assert!(!has(k), "{name}: {k} ran alone: {ran:?}");
        }
    }
}
