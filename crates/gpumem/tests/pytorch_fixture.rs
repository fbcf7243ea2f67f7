//! The engine's training step against PyTorch's own: every setup of the committed fixture
//! (`reference/pytorch/step_peaks.py`, MemTracker over two steps of the lesson's loop) planned
//! on the engine. The engine's peak of requested bytes must equal PyTorch's peak of raw tensor
//! bytes, except for one difference PyTorch itself has between its CPU (where the fixture was
//! measured) and CUDA (which the engine follows): non-fused Adam keeps each parameter's `step`
//! count as a 4-byte tensor on the CPU when the parameters are on a GPU, so those bytes are not
//! GPU memory there, though the fixture, made on the CPU, counts them.

use gpumem::lesson::planning_unlimited;
use gpumem::measure::measure_step;
use gpumem::mlp::{Optimizer, OptimizerImpl};
use gpumem::pytorch::{FIXTURE, Fixture};

#[test]
fn the_engine_spends_memory_as_pytorch_does_on_every_fixture_setup() {
    let fixture = Fixture::load(std::path::Path::new(FIXTURE)).unwrap();
    assert!(
        fixture.setups.len() >= 30,
        "the fixture has {} setups",
        fixture.setups.len()
    );
    let mut compared = 0;
    let mut worst = (0.0f64, String::new());
    let mut failures = Vec::new();
    for setup in &fixture.setups {
        let config = match setup.config() {
            Ok(c) => c,
            // CPU autocast's loss policy: its CUDA twin is in the fixture and compared.
            Err(why) if setup.strategy.autocast_loss.as_deref() == Some("cpu") => {
                assert!(why.contains("loss policy"), "{}: {why}", setup.name);
                continue;
            }
            Err(why) => panic!("{}: the engine cannot express it: {why}", setup.name),
        };
        let m = measure_step(&planning_unlimited(), &config, setup.batch, 0).unwrap();
        assert!(
            m.fits(),
            "{}: out of memory on an unlimited device",
            setup.name
        );
        let (engine, pytorch) = (m.peak_requested, setup.peak_bytes);
        // Non-fused Adam's step counts: 4 bytes per parameter tensor, on the CPU under CUDA.
        let cpu_steps = match (config.optimizer, config.strategy.optimizer_impl) {
            (Optimizer::Adam { .. }, OptimizerImpl::Foreach | OptimizerImpl::ForLoop) => {
                4 * 2 * (config.layers + 1)
            }
            _ => 0,
        };
        let diff = (engine as f64 - pytorch as f64) / pytorch as f64;
        if diff.abs() > worst.0 {
            worst = (diff.abs(), setup.name.clone());
        }
        if diff.abs() > 0.01 || engine > pytorch || pytorch - engine > cpu_steps {
            failures.push(format!(
                "{}: engine {engine} B, PyTorch {pytorch} B ({:+.4} %; at most {cpu_steps} B of \
                 CPU step counts may differ)",
                setup.name,
                100.0 * diff
            ));
        }
        compared += 1;
    }
    println!(
        "{compared} setups compared with PyTorch {}; worst relative difference {:.2e} ({})",
        fixture.torch_version, worst.0, worst.1
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared >= 30, "only {compared} setups compared");
}
