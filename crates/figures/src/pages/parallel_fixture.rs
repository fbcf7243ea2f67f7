//! The engine's multi-card schemes against PyTorch's own per-card figures
//! (`reference/pytorch/parallel_peaks.py`'s fixture), as a paragraph of the multi-card page.
//! The same comparison as the engine's test `pytorch_parallel_fixture`, counted here.

use anyhow::{Result, anyhow};
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{Optimizer, OptimizerImpl};
use gpumem::parallel::{Scheme, measure_group, zero1_owned};
use gpumem::pytorch::{PARALLEL_FIXTURE, ParallelFixture};
use gpumem::tensor::DType;
use std::fmt::Write as _;

/// The fixture's scheme names, the engine's scheme for each, and the words the page uses.
const SCHEMES: [(&str, Scheme, &str); 5] = [
    ("ddp", Scheme::Ddp, "DDP"),
    ("ddp_view", Scheme::DdpBucketView, "DDP with bucket views"),
    ("zero1", Scheme::Zero1, "ZeRO-1"),
    ("fsdp", Scheme::Zero3, "FSDP2"),
    (
        "fsdp_no_reshard",
        Scheme::Zero2,
        "FSDP2 with `reshard_after_forward=False`",
    ),
];

/// The engine's scheme for the fixture's name.
fn scheme(name: &str) -> Result<Scheme> {
    SCHEMES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, s, _)| *s)
        .ok_or_else(|| anyhow!("PyTorch's parallel fixture has a scheme `{name}`"))
}

/// The schemes the fixture holds, in words, in [`SCHEMES`]' order.
fn schemes_in_words(fixture: &ParallelFixture) -> String {
    let words: Vec<&str> = SCHEMES
        .iter()
        .filter(|(n, _, _)| fixture.setups.iter().any(|s| s.scheme == *n))
        .map(|(_, _, w)| *w)
        .collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// Compares every card of the fixture; PyTorch's peak less Adam's `step` counts (4 B per
/// parameter the card updates, kept on the CPU when the parameters are on a GPU).
pub fn parallel_fixture() -> Result<String> {
    let fixture =
        ParallelFixture::load(std::path::Path::new(PARALLEL_FIXTURE)).map_err(|e| anyhow!(e))?;
    let (mut equal, mut worst) = (0, 0.0f64);
    for s in &fixture.setups {
        let config = s.config().map_err(|e| anyhow!(e))?;
        let scheme = scheme(&s.scheme)?;
        let m = measure_group(
            &planning_unlimited(),
            &config,
            scheme,
            s.world_size,
            s.batch,
            0,
        )?;
        let card = m
            .cards
            .get(s.rank)
            .ok_or_else(|| anyhow!("{}: no card {}", s.name, s.rank))?;
        let owned = match scheme {
            Scheme::Zero1 => zero1_owned(&config, s.world_size, s.rank),
            _ => 2 * (config.layers as usize + 1),
        };
        let foreach = matches!(
            config.strategy.optimizer_impl,
            OptimizerImpl::Foreach | OptimizerImpl::ForLoop
        );
        let steps = match config.optimizer {
            Optimizer::Adam { .. } if foreach => DType::F32.size() * owned as u64,
            _ => 0,
        };
        let pytorch = s.peak_run_bytes.max(s.construct_peak_bytes) - steps;
        equal += u64::from(card.peak_requested == pytorch);
        let diff = (card.peak_requested as f64 - pytorch as f64).abs() / pytorch as f64;
        worst = worst.max(diff);
    }
    let sizes: Vec<usize> = fixture.setups.iter().map(|s| s.world_size).collect();
    let mut out = format!(
        "PyTorch {}'s fixture holds {} cards ({}, on {} to {} cards, SGD and Adam); the engine's peak of bytes asked for equals PyTorch's, \
         to the byte, on {equal} of them once Adam's `step` counts are set aside ({} B per \
         parameter, which PyTorch keeps on the CPU when the model is on a GPU)",
        fixture.torch_version,
        fixture.setups.len(),
        schemes_in_words(&fixture),
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
        DType::F32.size(),
    );
    if equal as usize == fixture.setups.len() {
        out.push_str(".\n");
    } else {
        writeln!(out, ", and is within {:.3} % on the others.", 100.0 * worst)?;
    }
    Ok(out)
}
