use super::*;
use crate::data::Dataset;
use crate::mlp::{Batch, MlpConfig, Optimizer};

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
        let w: Vec<f32> = g.weight.read().unwrap();
        let b: Vec<f32> = g.bias.read().unwrap();
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
            MlpConfig::lesson(10).with_optimizer(Optimizer::Sgd { lr: 0.0 }),
            "finite positive",
        ),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::Sgd { lr: f32::NAN }),
            "finite positive",
        ),
        (
            MlpConfig::lesson(10).with_optimizer(Optimizer::Sgd { lr: -1.0 }),
            "finite positive",
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
    assert_eq!(dev.memory_allocated(), model);
    assert!(dev.max_memory_allocated() > model);
    let r = m.train_step(Batch::Planned(64)).unwrap();
    assert_eq!((r.loss, r.correct), (None, None), "nothing runs on plan");
}
