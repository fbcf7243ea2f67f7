//! The engine's multi-card schemes against PyTorch's own per-card figures
//! (`reference/pytorch/parallel_peaks.py` and `pipeline_peaks.py`'s fixtures), as a paragraph
//! of the multi-card page. The same comparison as the engine's test `pytorch_parallel_fixture`,
//! counted here.

use anyhow::{Result, anyhow};
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{MlpConfig, Optimizer, OptimizerImpl};
use gpumem::parallel::{Scheme, measure_group_with, stage_layers, zero1_owned};
use gpumem::pytorch::{PARALLEL_FIXTURE, PIPELINE_FIXTURE, ParallelFixture, ParallelSetup};
use gpumem::tensor::DType;

/// The fixtures' scheme names, the engine's scheme for each, and the words the page uses.
const SCHEMES: [(&str, Scheme, &str); 7] = [
    ("ddp", Scheme::Ddp, "DDP"),
    ("ddp_view", Scheme::DdpBucketView, "DDP with bucket views"),
    ("zero1", Scheme::Zero1, "ZeRO-1"),
    ("fsdp", Scheme::Zero3, "FSDP2"),
    (
        "fsdp_no_reshard",
        Scheme::Zero2,
        "FSDP2 with `reshard_after_forward=False`",
    ),
    ("pipeline_gpipe", Scheme::PipelineGpipe, "GPipe"),
    ("pipeline_1f1b", Scheme::Pipeline1f1b, "1F1B"),
];

/// The engine's scheme for the fixture's name.
fn scheme(name: &str) -> Result<Scheme> {
    SCHEMES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, s, _)| *s)
        .ok_or_else(|| anyhow!("a PyTorch fixture has a scheme `{name}`"))
}

/// The schemes a fixture holds, in words, in [`SCHEMES`]' order.
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

/// Adam's `step` counts on the card: one float32 per parameter tensor it updates, which PyTorch
/// keeps on the CPU when the parameters are on a GPU (the fixture, made on the CPU, counts
/// them).
fn cpu_steps(config: &MlpConfig, scheme: Scheme, s: &ParallelSetup) -> Result<u64> {
    let foreach = matches!(
        config.strategy.optimizer_impl,
        OptimizerImpl::Foreach | OptimizerImpl::ForLoop
    );
    if !(matches!(config.optimizer, Optimizer::Adam { .. }) && foreach) {
        return Ok(0);
    }
    let updated = match scheme {
        Scheme::Zero1 => zero1_owned(config, s.world_size, s.rank),
        Scheme::PipelineGpipe | Scheme::Pipeline1f1b => {
            let stages = stage_layers(config, s.world_size)?;
            let stage = stages
                .get(s.rank)
                .ok_or_else(|| anyhow!("{}: no stage {}", s.name, s.rank))?;
            2 * stage.len()
        }
        _ => 2 * (config.layers as usize + 1),
    };
    Ok(DType::F32.size() * updated as u64)
}

/// One fixture compared: its cards, how many the engine equals to the byte, the largest
/// relative difference.
struct Compared {
    fixture: ParallelFixture,
    equal: usize,
    worst: f64,
}

fn compare(path: &str) -> Result<Compared> {
    let fixture = ParallelFixture::load(std::path::Path::new(path)).map_err(|e| anyhow!(e))?;
    let (mut equal, mut worst) = (0, 0.0f64);
    for s in &fixture.setups {
        let config = s.config().map_err(|e| anyhow!(e))?;
        let scheme = scheme(&s.scheme)?;
        let options = planning_unlimited();
        let m = measure_group_with(
            &options,
            &config,
            scheme,
            s.world_size,
            s.batch,
            0,
            s.micro_batches,
        )?;
        let card = m
            .cards
            .get(s.rank)
            .ok_or_else(|| anyhow!("{}: no card {}", s.name, s.rank))?;
        let pytorch = s.peak_run_bytes.max(s.construct_peak_bytes) - cpu_steps(&config, scheme, s)?;
        equal += usize::from(card.peak_requested == pytorch);
        let diff = (card.peak_requested as f64 - pytorch as f64).abs() / pytorch as f64;
        worst = worst.max(diff);
    }
    Ok(Compared {
        fixture,
        equal,
        worst,
    })
}

/// The optimizers a fixture's setups use, as the book names them.
fn optimizers_in_words(fixture: &ParallelFixture) -> String {
    let mut names: Vec<&str> = Vec::new();
    for s in &fixture.setups {
        let name = match s.optimizer.name.as_str() {
            "sgd" => "SGD",
            "adam" => "Adam",
            other => other,
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(" and ")
}

/// One fixture in words: `81 data-parallel and sharded cards (DDP, …, on 1 to 8 cards, SGD
/// and Adam)`.
fn holds(c: &Compared, what: &str) -> String {
    let sizes: Vec<usize> = c.fixture.setups.iter().map(|s| s.world_size).collect();
    format!(
        "{} {what} ({}, on {} to {} cards, {})",
        c.fixture.setups.len(),
        schemes_in_words(&c.fixture),
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
        optimizers_in_words(&c.fixture),
    )
}

/// How many of a fixture's cards the engine equals: `every one of the 81` or `79 of the
/// 81 (the others within 0.010 %)`.
fn verdict(c: &Compared) -> String {
    let n = c.fixture.setups.len();
    if c.equal == n {
        format!("every one of the {n}")
    } else {
        format!(
            "{} of the {n} (the others within {:.3} %)",
            c.equal,
            100.0 * c.worst
        )
    }
}

/// Both fixtures compared, as a paragraph.
pub fn parallel_fixture() -> Result<String> {
    let data = compare(PARALLEL_FIXTURE)?;
    let pipes = compare(PIPELINE_FIXTURE)?;
    Ok(format!(
        "PyTorch {}'s fixtures hold {} and {}. The engine's peak of bytes asked for equals \
         PyTorch's to the byte on {} cards and on {} stages, once Adam's `step` counts are set \
         aside ({} B for each weight and each bias, which PyTorch keeps on the CPU when the \
         model is on a GPU).\n",
        data.fixture.torch_version,
        holds(&data, "data-parallel and sharded cards"),
        holds(&pipes, "pipeline stages"),
        verdict(&data),
        verdict(&pipes),
        DType::F32.size(),
    ))
}
