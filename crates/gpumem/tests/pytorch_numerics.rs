//! What the engine's step computes, against what PyTorch's computes: every setup of the
//! committed numerics fixture (`reference/pytorch/numerics.py`: the lesson's network and a
//! deeper one, three steps of SGD, SGD with momentum, Adam as foreach, for-loop and fused,
//! accumulation and checkpointing, from weights and data written into the fixture) run on the
//! cpu backing, its losses per step and its parameters after the last step compared. Three
//! setups run mixed precision with a `GradScaler` for six steps, whose initial scale makes
//! the first step's float16 gradients overflow (the step is skipped, the scale halved) and
//! whose growth interval of 2 doubles it within the six: their loss scales per step and the
//! steps skipped must be PyTorch's exactly.
//!
//! Tolerance: float32 rounding. PyTorch's CPU kernels and the engine's add up a product's terms
//! in different orders; each sum of `n` float32 terms may differ by about `n·ε·Σ|terms|`
//! (ε = 2⁻²³ ≈ 1.2e-7, n ≤ 2000 here), and three steps carry it forward. A relative and
//! absolute tolerance of 1e-4 is above that and far below what a wrong rule changes: one
//! update of lr·gradient moves the parameters by 1e-3 or more of their size.

use gpumem::mlp::{
    Batch, Checkpointing, GradScalerConfig, Mlp, MlpConfig, Optimizer, OptimizerImpl, Precision,
};
use gpumem::{Backend, Device, DeviceOptions, MemorySpec};
use std::collections::BTreeMap;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/pytorch_numerics.json"
);
const TOLERANCE: f64 = 1e-4;
/// On wgpu: WGSL's `exp` and `log` may be off by a few ULP more than Rust's (the WGSL spec
/// allows it), and a GPU's products add up in tiles, so ten times the cpu backing's.
const WGPU_TOLERANCE: f64 = 1e-3;
/// Mixed precision, both backings: float16's ε = 2⁻¹⁰ ≈ 1e-3. The products still add up in
/// float32, but each float16 activation and gradient is rounded once, and where PyTorch's sum
/// and the engine's (in another order, or WGSL's `exp` and `log`) land on either side of a
/// rounding boundary, a value differs by one float16 step, 2⁻¹⁰ of it. The loss and each
/// update inherit at most about that share (a parameter far less: it moves by lr·gradient).
/// The loss scales, the steps skipped and the scale's growth are compared exactly: the
/// fixture's script keeps every step's largest float16 gradient at least 5 % away from
/// float16's largest value, so an overflow never hinges on a rounding.
const MIXED_TOLERANCE: f64 = 1e-3;

/// The script that makes the fixture.
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../reference/pytorch/numerics.py"
);

#[derive(serde::Deserialize)]
struct Fixture {
    torch_version: String,
    script_sha256: String,
    steps: usize,
    rows: usize,
    networks: BTreeMap<String, Network>,
    setups: Vec<Setup>,
}

#[derive(serde::Deserialize)]
struct Network {
    width: u64,
    layers: u64,
    initial: Vec<String>,
    x: String,
    y: Vec<u32>,
}

#[derive(serde::Deserialize)]
struct Setup {
    name: String,
    network: String,
    optimizer: String,
    implementation: String,
    lr: f32,
    momentum: f32,
    accumulation: u64,
    checkpoint_hidden: bool,
    losses: Vec<f64>,
    #[serde(rename = "final")]
    last: Vec<String>,
    /// Mixed precision with a `GradScaler` (`None`: float32).
    #[serde(flatten)]
    mixed: Option<Mixed>,
}

/// A mixed-precision setup's `GradScaler`, and what it did.
#[derive(serde::Deserialize)]
struct Mixed {
    precision: String,
    init_scale: f32,
    growth_interval: u32,
    /// Steps run (step `i` on batch `i % steps` of the fixture's).
    steps: usize,
    /// The scale each step ran with.
    loss_scales: Vec<f32>,
    skipped: Vec<bool>,
    final_loss_scale: f32,
}

/// What a run did: its losses, its parameters after the last step, and under a `GradScaler`
/// the scale each step ran with, the steps skipped and the scale after the last.
struct Run {
    losses: Vec<f64>,
    params: Vec<Vec<f64>>,
    scales: Vec<f32>,
    skipped: Vec<bool>,
    final_scale: f32,
}

/// Standard base64 (as Python's `base64.b64encode` writes it) to float32 little-endian.
fn floats(text: &str) -> Vec<f32> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut bytes = Vec::new();
    for chunk in text.trim_end_matches('=').as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= u32::from(value(c)) << (18 - 6 * i);
        }
        bytes.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// PyTorch's `out × in` weight as the engine's `in × out`.
fn transpose(values: &[f32], out: usize) -> Vec<f32> {
    let inp = values.len() / out;
    (0..inp * out)
        .map(|i| values[(i % out) * inp + i / out])
        .collect()
}

fn config(setup: &Setup, net: &Network) -> MlpConfig {
    let optimizer = match setup.optimizer.as_str() {
        "adam" => Optimizer::adam(setup.lr),
        _ => Optimizer::Sgd {
            lr: setup.lr,
            momentum: setup.momentum,
        },
    };
    let mut c = MlpConfig::lesson(net.width)
        .with_layers(net.layers)
        .with_optimizer(optimizer);
    c.strategy.optimizer_impl = match setup.implementation.as_str() {
        "for-loop" => OptimizerImpl::ForLoop,
        "fused" => OptimizerImpl::Fused,
        _ => OptimizerImpl::Foreach,
    };
    c.strategy.accumulation = setup.accumulation;
    if setup.checkpoint_hidden {
        c.strategy.checkpointing = Checkpointing::Each(net.layers);
    }
    if let Some(m) = &setup.mixed {
        assert_eq!(m.precision, "mixed", "{}", setup.name);
        c.strategy.precision = Precision::Mixed;
        c.strategy.scaler = GradScalerConfig::new(m.init_scale, m.growth_interval);
    }
    c
}

/// The worst of |a − b| / (tolerance · max(1, |b|)) over two lists: at most 1 passes. A NaN
/// or an infinity on either side is infinitely far (`f64::max` would drop a NaN).
fn worst(a: &[f64], b: &[f64], tolerance: f64) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            let d = (a - b).abs() / (tolerance * b.abs().max(1.0));
            if d.is_finite() { d } else { f64::INFINITY }
        })
        .fold(0.0, f64::max)
}

/// Runs `setup` on `device`: its losses and its parameters after the last step, in
/// PyTorch's order and layout, and its loss scales.
fn run(fixture: &Fixture, setup: &Setup, device: &Device) -> Run {
    let net = &fixture.networks[&setup.network];
    let mut mlp = Mlp::new(device, &config(setup, net), 0).unwrap();
    for (i, layer) in mlp.layers().iter().enumerate() {
        let (w, b) = (floats(&net.initial[2 * i]), floats(&net.initial[2 * i + 1]));
        layer.weight.write_f32(&transpose(&w, b.len())).unwrap();
        layer.bias.write_f32(&b).unwrap();
    }
    let x = floats(&net.x);
    let features = x.len() / net.y.len();
    let steps = setup.mixed.as_ref().map_or(fixture.steps, |m| m.steps);
    let (mut losses, mut scales, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for step in 0..steps {
        let batch = step % fixture.steps;
        let rows = batch * fixture.rows..(batch + 1) * fixture.rows;
        let batch = gpumem::data::Split {
            x: x[rows.start * features..rows.end * features].to_vec(),
            y: net.y[rows].to_vec(),
        };
        scales.push(mlp.loss_scale());
        let r = mlp.train_step(Batch::Data(&batch)).unwrap();
        losses.push(f64::from(r.loss.unwrap()));
        skipped.push(r.skipped);
    }
    let params = mlp
        .layers()
        .iter()
        .flat_map(|l| {
            let out = l.bias.cols() as usize;
            let w: Vec<f32> = l.weight.read().unwrap();
            let b: Vec<f32> = l.bias.read().unwrap();
            [transpose(&w, w.len() / out), b]
        })
        .map(|v| v.into_iter().map(f64::from).collect())
        .collect();
    Run {
        losses,
        params,
        scales,
        skipped,
        final_scale: mlp.loss_scale(),
    }
}

/// Every setup on devices from `device`, within `tolerance` (`mixed`: the float16 setups'),
/// their loss scales exactly; prints each setup's worst difference as a share of its
/// tolerance.
fn compare(device: impl Fn() -> Device, tolerance: f64, mixed: f64) {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let fixture: Fixture = serde_json::from_str(&text).unwrap();
    assert!(fixture.setups.len() >= 10, "{}", fixture.torch_version);
    // The mixed setups must show a skipped step and the scale's growth.
    let scalers: Vec<&Mixed> = fixture
        .setups
        .iter()
        .filter_map(|s| s.mixed.as_ref())
        .collect();
    assert!(scalers.iter().any(|m| m.skipped.contains(&true)));
    assert!(scalers.iter().any(|m| {
        let mut after = m.loss_scales[1..].to_vec();
        after.push(m.final_loss_scale);
        m.loss_scales.iter().zip(&after).any(|(a, b)| b > a)
    }));
    let mut failures = Vec::new();
    for setup in &fixture.setups {
        let tolerance = if setup.mixed.is_some() {
            mixed
        } else {
            tolerance
        };
        let got = run(&fixture, setup, &device());
        let of_losses = worst(&got.losses, &setup.losses, tolerance);
        let mut w = of_losses;
        for (got, want) in got.params.iter().zip(&setup.last) {
            let want: Vec<f64> = floats(want).into_iter().map(f64::from).collect();
            w = w.max(worst(got, &want, tolerance));
        }
        println!(
            "{:<38} {w:.4} of the tolerance ({tolerance:e}): worst {:.2e} (losses {:.2e})",
            setup.name,
            w * tolerance,
            of_losses * tolerance
        );
        if w > 1.0 {
            failures.push(format!(
                "{}: {w:.1}× the tolerance (losses {:?}, PyTorch {:?})",
                setup.name, got.losses, setup.losses
            ));
        }
        if let Some(m) = &setup.mixed {
            let ours = (&got.scales, &got.skipped, got.final_scale);
            if ours != (&m.loss_scales, &m.skipped, m.final_loss_scale) {
                failures.push(format!(
                    "{}: loss scales {:?} then {}, skipped {:?}; PyTorch's {:?} then {}, {:?}",
                    setup.name,
                    got.scales,
                    got.final_scale,
                    got.skipped,
                    m.loss_scales,
                    m.final_loss_scale,
                    m.skipped
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "against torch {}:\n{}",
        fixture.torch_version,
        failures.join("\n")
    );
}

#[test]
fn the_cpu_backing_computes_what_pytorch_computes() {
    let options = DeviceOptions {
        backend: Backend::Cpu,
        memory: MemorySpec::Bytes(1 << 30),
        ..Default::default()
    };
    compare(
        || Device::new(&options).unwrap(),
        TOLERANCE,
        MIXED_TOLERANCE,
    );
}

#[test]
fn wgpu_computes_what_pytorch_computes() {
    let Some(gpu) = gpumem::testing::gpu() else {
        return;
    };
    compare(
        || gpu.device(MemorySpec::Bytes(1 << 30)),
        WGPU_TOLERANCE,
        MIXED_TOLERANCE,
    );
}

#[test]
fn the_fixture_is_the_scripts_latest_run() {
    use sha2::Digest;
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let fixture: Fixture = serde_json::from_str(&text).unwrap();
    let script = std::fs::read(SCRIPT).unwrap();
    let hash: String = sha2::Sha256::digest(&script)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        fixture.script_sha256, hash,
        "reference/pytorch/numerics.py changed after it made the fixture: rerun it"
    );
}

#[test]
fn base64_and_layout_round_trip() {
    // A NaN fails, however small the tolerance's other terms.
    assert_eq!(worst(&[f64::NAN, 1.0], &[1.0, 1.0], 1e-3), f64::INFINITY);
    // "AACAPwAAAEA=" is 1.0f32, 2.0f32 little-endian.
    assert_eq!(floats("AACAPwAAAEA="), [1.0, 2.0]);
    // A 2 × 3 (out × in) weight, transposed to 3 × 2.
    assert_eq!(
        transpose(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2),
        [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
}
