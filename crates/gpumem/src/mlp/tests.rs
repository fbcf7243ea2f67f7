use super::*;
use crate::data::Dataset;
use crate::mlp::{Batch, Checkpointing, MlpConfig, Optimizer, Strategy};

/// A plain f64 reference of the network: returns (mean loss, weight grads, bias grads).
fn reference(
    params: &[(Vec<f32>, Vec<f32>)],
    shapes: &[(u64, u64)],
    x: &[f32],
    y: &[u32],
) -> (f64, Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let rows = y.len();
    let mut acts: Vec<Vec<f64>> = vec![x.iter().map(|&v| v as f64).collect()];
    for (l, ((w, b), &(fi, fo))) in params.iter().zip(shapes).enumerate() {
        let (fi, fo) = (fi as usize, fo as usize);
        let input = acts.last().unwrap();
        let mut out = vec![0.0; rows * fo];
        for r in 0..rows {
            for j in 0..fo {
                let mut s = b[j] as f64;
                for k in 0..fi {
                    s += input[r * fi + k] * w[k * fo + j] as f64;
                }
                out[r * fo + j] = if l + 1 < shapes.len() { s.max(0.0) } else { s };
            }
        }
        acts.push(out);
    }
    let c = shapes.last().unwrap().1 as usize;
    let logits = acts.last().unwrap();
    let mut loss = 0.0;
    let mut delta = vec![0.0; rows * c];
    for r in 0..rows {
        let row = &logits[r * c..(r + 1) * c];
        let max = row.iter().cloned().fold(f64::MIN, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        loss += sum.ln() + max - row[y[r] as usize];
        for j in 0..c {
            let p = (row[j] - max).exp() / sum;
            delta[r * c + j] = (p - if j == y[r] as usize { 1.0 } else { 0.0 }) / rows as f64;
        }
    }
    let mut gw = vec![vec![]; shapes.len()];
    let mut gb = vec![vec![]; shapes.len()];
    for l in (0..shapes.len()).rev() {
        let (fi, fo) = (shapes[l].0 as usize, shapes[l].1 as usize);
        let input = &acts[l];
        gw[l] = (0..fi * fo)
            .map(|i| {
                (0..rows)
                    .map(|r| input[r * fi + i / fo] * delta[r * fo + i % fo])
                    .sum()
            })
            .collect();
        gb[l] = (0..fo)
            .map(|j| (0..rows).map(|r| delta[r * fo + j]).sum())
            .collect();
        if l > 0 {
            let w = &params[l].0;
            delta = (0..rows * fi)
                .map(|i| {
                    let (r, k) = (i / fi, i % fi);
                    let g: f64 = (0..fo)
                        .map(|j| delta[r * fo + j] * w[k * fo + j] as f64)
                        .sum();
                    if input[i] > 0.0 { g } else { 0.0 }
                })
                .collect();
        }
    }
    (loss / rows as f64, gw, gb)
}

/// |got − want| ≤ 1e-4 · max(1, |want|): relative for large values, absolute for tiny ones.
pub(crate) fn close(got: f32, want: f64) -> bool {
    (got as f64 - want).abs() <= 1e-4 * want.abs().max(1.0)
}

pub(crate) fn check_step_against_reference(device: &Device) {
    let config = MlpConfig::lesson(7).with_layers(3);
    let data = Dataset::generate(13, 5);
    let mut mlp = Mlp::new(device, &config, 11).unwrap();
    let params: Vec<(Vec<f32>, Vec<f32>)> = mlp
        .layers()
        .iter()
        .map(|l| (l.weight.read().unwrap(), l.bias.read().unwrap()))
        .collect();
    let (loss, gw, gb) = reference(
        &params,
        &config.layer_shapes(),
        &data.train.x,
        &data.train.y,
    );
    let r = mlp.train_step(Batch::Data(&data.train)).unwrap();
    assert!(
        close(r.loss.unwrap(), loss),
        "loss {} vs {loss}",
        r.loss.unwrap()
    );
    for (l, g) in mlp.gradients().iter().enumerate() {
        let w: Vec<f32> = g.weight.as_ref().unwrap().read().unwrap();
        let b: Vec<f32> = g.bias.as_ref().unwrap().read().unwrap();
        for (i, (&got, &want)) in w.iter().zip(&gw[l]).enumerate() {
            assert!(close(got, want), "layer {l} dW[{i}]: {got} vs {want}");
        }
        for (i, (&got, &want)) in b.iter().zip(&gb[l]).enumerate() {
            assert!(close(got, want), "layer {l} db[{i}]: {got} vs {want}");
        }
    }
}

#[test]
fn cpu_step_matches_a_plain_reference() {
    check_step_against_reference(&Device::cpu(64 << 20));
}

#[test]
fn cpu_training_learns_the_synthetic_task() {
    let dev = Device::cpu(256 << 20);
    let data = Dataset::generate(4000, 1);
    let config = MlpConfig::lesson(32).with_optimizer(Optimizer::adam(0.01));
    let mut mlp = Mlp::new(&dev, &config, 1).unwrap();
    let (first_loss, _) = mlp.evaluate(&data.validation, 500).unwrap();
    let mut rng = crate::data::rng(2);
    for _ in 0..3 {
        for idx in crate::data::epoch_batches(data.train.len(), 32, &mut rng) {
            mlp.train_step(Batch::Data(&data.train.gather(&idx)))
                .unwrap();
        }
    }
    let (loss, acc) = mlp.evaluate(&data.validation, 500).unwrap();
    assert!(loss < first_loss, "{loss} !< {first_loss}");
    assert!(acc > 0.65, "validation accuracy {acc}");
}

#[test]
fn bad_configurations_are_errors() {
    let dev = Device::plan(1 << 30);
    let cases = [
        (
            MlpConfig::lesson(10).with_layers(0),
            "at least 1 hidden layer",
        ),
        (MlpConfig::lesson(0), "width of 0"),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::sgd(0.0)),
            "finite positive",
        ),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::sgd(f32::NAN)),
            "finite positive",
        ),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::sgd(-1.0)),
            "finite positive",
        ),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::Sgd {
                lr: 0.1,
                momentum: -0.9,
            }),
            "momentum must be a finite number of at least 0",
        ),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::Sgd {
                lr: 0.1,
                momentum: f32::INFINITY,
            }),
            "momentum must be a finite number",
        ),
        (
            MlpConfig::lesson(10).with_strategy(Strategy {
                checkpointing: Checkpointing::Each(0),
                ..Default::default()
            }),
            "at least 1 layer",
        ),
        (
            MlpConfig::lesson(5000).with_layers(100_000_000),
            "at most 100000",
        ),
        (MlpConfig::lesson(u64::MAX / 4).with_layers(3), "64 bits"),
    ];
    for (config, text) in cases {
        let e = Mlp::new(&dev, &config, 0).unwrap_err();
        assert!(e.to_string().contains(text), "{e}");
    }
    let mut m = Mlp::new(&dev, &MlpConfig::lesson(10), 0).unwrap();
    assert!(m.train_step(Batch::Planned(0)).is_err());
}

#[test]
fn a_step_frees_everything_but_the_model() {
    let dev = Device::plan(1 << 30);
    let mut m = Mlp::new(&dev, &MlpConfig::lesson(100).with_layers(3), 0).unwrap();
    let model = dev.memory_allocated();
    m.train_step(Batch::Planned(64)).unwrap();
    assert!(dev.max_memory_allocated() > model);
    // Left: the parameters, their gradients (until the next zero_grad) and the loop's
    // y_pred and loss (until the next step rebinds them).
    let grads: u64 = m
        .gradients()
        .iter()
        .flat_map(|g| [&g.weight, &g.bias])
        .map(|t| t.as_ref().unwrap().placement().size)
        .sum();
    m.release_outputs();
    assert_eq!(dev.memory_allocated(), model + grads);
    let r = m.train_step(Batch::Planned(64)).unwrap();
    assert_eq!((r.loss, r.correct), (None, None), "nothing runs on plan");
}

mod strategies {
    use super::*;
    use crate::mlp::{Checkpointing, Precision, Strategy};

    fn strategy(precision: Precision, accumulation: u64, checkpointing: Checkpointing) -> Strategy {
        Strategy {
            precision,
            accumulation,
            checkpointing,
            ..Default::default()
        }
    }

    /// Parameters after one step of `config` from seed 7 on `data`, as f64.
    fn after_one_step(
        config: &MlpConfig,
        data: &crate::data::Split,
    ) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, StepResult) {
        let dev = Device::cpu(1 << 30);
        let mut m = Mlp::new(&dev, config, 7).unwrap();
        let r = m.train_step(Batch::Data(data)).unwrap();
        let params = m
            .layers()
            .iter()
            .flat_map(|l| [l.weight.read_f64().unwrap(), l.bias.read_f64().unwrap()])
            .collect();
        let grads = m
            .gradients()
            .iter()
            .flat_map(|l| [&l.weight, &l.bias].map(|t| t.as_ref().unwrap().read_f64().unwrap()))
            .collect();
        (params, grads, r)
    }

    fn max_rel(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
        a.iter()
            .zip(b)
            .flat_map(|(x, y)| {
                let scale = y.iter().fold(0f64, |m, v| m.max(v.abs()));
                x.iter()
                    .zip(y)
                    .map(move |(p, q)| (p - q).abs() / q.abs().max(0.01 * scale).max(1e-30))
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn accumulation_updates_like_the_large_batch() {
        let data = Dataset::generate(64, 3).train;
        for opt in [Optimizer::sgd(0.1), Optimizer::adam(0.01)] {
            let base = MlpConfig::lesson(24).with_layers(3).with_optimizer(opt);
            let (p1, g1, r1) = after_one_step(&base, &data);
            // Even splits only: with uneven ones, `loss / k` weighs the rows of the shorter
            // micro-batches more than the mean over the batch does (PyTorch's idiom too).
            for k in [2, 4, 8] {
                let acc =
                    base.clone()
                        .with_strategy(strategy(Precision::Float32, k, Checkpointing::Off));
                let (pk, gk, rk) = after_one_step(&acc, &data);
                assert!(
                    max_rel(&gk, &g1) < 1e-5,
                    "{opt} k={k}: gradients differ by {}",
                    max_rel(&gk, &g1)
                );
                assert!(
                    max_rel(&pk, &p1) < 1e-5,
                    "{opt} k={k}: parameters differ by {}",
                    max_rel(&pk, &p1)
                );
                assert!((rk.loss.unwrap() - r1.loss.unwrap()).abs() < 1e-5);
                assert_eq!(rk.correct, r1.correct);
            }
        }
    }

    #[test]
    fn checkpointed_gradients_equal_the_plain_ones() {
        let data = Dataset::generate(40, 5).train;
        let base = MlpConfig::lesson(16)
            .with_layers(7)
            .with_optimizer(Optimizer::adam(0.01));
        let (p1, g1, r1) = after_one_step(&base, &data);
        assert_eq!(r1.recomputed_layers, 0);
        // Every checkpointed segment is computed again whole; `Every` leaves the last
        // segment alone (7 layers: segments of 1 → 6 again, of 4 → 4), `Each` does not.
        for (ck, recomputed) in [
            (Checkpointing::Every(1), 6),
            (Checkpointing::Every(4), 4),
            (Checkpointing::Each(4), 7),
            (Checkpointing::Sqrt, 6),
        ] {
            let c = base
                .clone()
                .with_strategy(strategy(Precision::Float32, 1, ck));
            let (pc, gc, rc) = after_one_step(&c, &data);
            // Recomputing runs the same kernels on the same inputs: bit for bit equal.
            assert_eq!(gc, g1, "{ck:?}");
            assert_eq!(pc, p1, "{ck:?}");
            assert_eq!(rc.recomputed_layers, recomputed, "{ck:?}");
        }
    }

    #[test]
    fn float64_agrees_with_float32() {
        let data = Dataset::generate(50, 2).train;
        let base = MlpConfig::lesson(20).with_layers(2);
        let (_, g32, _) = after_one_step(&base, &data);
        let f64c = base
            .clone()
            .with_strategy(strategy(Precision::Float64, 1, Checkpointing::Off));
        let (_, g64, _) = after_one_step(&f64c, &data);
        assert!(max_rel(&g64, &g32) < 1e-4, "{}", max_rel(&g64, &g32));
    }

    #[test]
    fn mixed_precision_gradients_are_close_to_float32() {
        let data = Dataset::generate(128, 2).train;
        let base = MlpConfig::lesson(32).with_layers(2);
        let (_, g32, _) = after_one_step(&base, &data);
        let mixed = base
            .clone()
            .with_strategy(strategy(Precision::Mixed, 1, Checkpointing::Off));
        let (_, g16, r) = after_one_step(&mixed, &data);
        assert!(!r.skipped);
        // float16 keeps about 3 significant digits; autocast also rounds the inputs and
        // weights to float16, so a few ReLUs near zero flip: compare each tensor as a
        // whole (the norm of the difference), as mixed-precision checks do.
        for (a, b) in g16.iter().zip(&g32) {
            let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
            let err = norm(&mut a.iter().zip(b).map(|(p, q)| p - q)) / norm(&mut b.iter().copied());
            assert!(err < 2e-2, "{err}");
        }
    }

    #[test]
    fn loss_scaling_keeps_small_gradients_alive() {
        // A large batch makes every row's loss gradient tiny (1/rows): in float16 without
        // scaling many of them flush to zero; with the default scale they survive.
        let data = Dataset::generate(20_000, 2).train;
        let base = MlpConfig::lesson(16).with_layers(2);
        let (_, g32, _) = after_one_step(&base, &data);
        let mixed = base
            .clone()
            .with_strategy(strategy(Precision::Mixed, 1, Checkpointing::Off));
        let dev = Device::cpu(1 << 30);
        let err_with_scale = |scale: f32| {
            let mut m = Mlp::new(&dev, &mixed, 7).unwrap();
            m.set_loss_scale(scale).unwrap();
            m.train_step(Batch::Data(&data)).unwrap();
            let g: Vec<Vec<f64>> = m
                .gradients()
                .iter()
                .flat_map(|l| [&l.weight, &l.bias].map(|t| t.as_ref().unwrap().read_f64().unwrap()))
                .collect();
            max_rel(&g, &g32)
        };
        let unscaled = err_with_scale(1.0);
        let scaled = err_with_scale(65536.0);
        assert!(scaled < 5e-2, "scaled error {scaled}");
        assert!(
            unscaled > 5.0 * scaled,
            "unscaled {unscaled} vs scaled {scaled}"
        );
    }

    #[test]
    fn an_overflowing_loss_scale_skips_the_update_and_halves() {
        let data = Dataset::generate(64, 2).train;
        let mixed =
            MlpConfig::lesson(16).with_strategy(strategy(Precision::Mixed, 1, Checkpointing::Off));
        let dev = Device::cpu(1 << 30);
        let mut m = Mlp::new(&dev, &mixed, 7).unwrap();
        m.set_loss_scale(1e30).unwrap();
        let before = m.layers()[0].weight.read_f64().unwrap();
        let r = m.train_step(Batch::Data(&data)).unwrap();
        assert!(r.skipped);
        assert_eq!(m.layers()[0].weight.read_f64().unwrap(), before);
        assert_eq!(m.loss_scale(), 5e29);
    }

    #[test]
    fn the_scale_grows_after_growth_interval_good_steps() {
        use crate::mlp::GradScalerConfig;
        let data = Dataset::generate(64, 2).train;
        let mut s = strategy(Precision::Mixed, 1, Checkpointing::Off);
        s.scaler = GradScalerConfig::new(256.0, 3);
        let dev = Device::cpu(1 << 30);
        let mut m = Mlp::new(&dev, &MlpConfig::lesson(16).with_strategy(s), 7).unwrap();
        let mut scales = vec![m.loss_scale()];
        for _ in 0..6 {
            assert!(!m.train_step(Batch::Data(&data)).unwrap().skipped);
            scales.push(m.loss_scale());
        }
        assert_eq!(scales, [256.0, 256.0, 256.0, 512.0, 512.0, 512.0, 1024.0]);
    }

    #[test]
    fn the_scalers_settings_default_to_pytorchs_and_stay_out_of_the_json() {
        use crate::mlp::GradScalerConfig;
        let default = Strategy::default();
        assert_eq!(default.scaler, GradScalerConfig::new(65536.0, 2000));
        let json = serde_json::to_string(&default).unwrap();
        assert!(!json.contains("\"scaler\""), "{json}");
        assert_eq!(serde_json::from_str::<Strategy>(&json).unwrap(), default);
        let set = Strategy {
            scaler: GradScalerConfig::new(1024.0, 2),
            ..default
        };
        let json = serde_json::to_string(&set).unwrap();
        assert!(json.contains("\"init_scale\":1024.0"), "{json}");
        assert_eq!(serde_json::from_str::<Strategy>(&json).unwrap(), set);
        for bad in [
            GradScalerConfig::new(0.0, 2000),
            GradScalerConfig::new(f32::INFINITY, 2000),
            GradScalerConfig::new(f32::NAN, 2000),
            GradScalerConfig::new(65536.0, 0),
        ] {
            let s = Strategy {
                scaler: bad,
                ..default
            };
            assert!(MlpConfig::lesson(4).with_strategy(s).validate().is_err());
        }
    }

    #[test]
    fn mixed_precision_still_learns() {
        let data = Dataset::generate(4000, 1);
        let train = |precision| {
            let dev = Device::cpu(256 << 20);
            let config = MlpConfig::lesson(32)
                .with_optimizer(Optimizer::adam(0.01))
                .with_strategy(strategy(precision, 1, Checkpointing::Off));
            let mut mlp = Mlp::new(&dev, &config, 1).unwrap();
            let mut rng = crate::data::rng(2);
            for _ in 0..3 {
                for idx in crate::data::epoch_batches(data.train.len(), 32, &mut rng) {
                    mlp.train_step(Batch::Data(&data.train.gather(&idx)))
                        .unwrap();
                }
            }
            mlp.evaluate(&data.validation, 500).unwrap().1
        };
        let (full, mixed) = (train(Precision::Float32), train(Precision::Mixed));
        assert!(
            mixed > 0.65 && (full - mixed).abs() < 0.02,
            "float32 {full}, mixed {mixed}"
        );
    }
}
