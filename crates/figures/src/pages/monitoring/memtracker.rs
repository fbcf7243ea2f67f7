//! MemTracker's peak against CUDA's (`monitoring.md`): `pytorch/snippets/memory_stats.py`
//! counted the same step both ways on the H200, and the two peaks differ by more than half.
//! The sentence that reconciles them reads every figure from the committed records
//! (`pytorch/runs-cuda/` and `pytorch/runs/`), the workspaces from the engine's rules for the
//! record's PyTorch and the card's compute capability, and the same step planned by the
//! engine under those rules; it fails to render when the figures do not add up.

use crate::data::SEED;
use anyhow::{Context, Result, ensure};
use gpumem::Device;
use gpumem::lesson::planning_unlimited;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer};
use gpumem::versions::{ComputeCapability, Rules, TorchVersion};
use std::path::PathBuf;

const MIB: f64 = (1u64 << 20) as f64;

/// The snippet's step, as its source writes it (inputs it chose): hidden width, batch,
/// Adam's learning rate, and the steps before `reset_peak_memory_stats()` (MemTracker's two).
const WIDTH: u64 = 2000;
const ROWS: u64 = 4096;
const LR: f32 = 0.001;
const STEPS_BEFORE_RESET: u32 = 2;

/// The snippet's inputs `x` (float32, 2 features) and `y` (int64), made before MemTracker
/// starts, so it does not count them: bytes.
const INPUT_BYTES: u64 = ROWS * 2 * 4 + ROWS * 8;

fn record(rel: &str) -> Result<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../pytorch")
        .join(rel);
    std::fs::read_to_string(&path).with_context(|| path.display().to_string())
}

/// The number after `prefix` on the line that starts with it, in MiB (`93.89`).
fn mib_after(text: &str, prefix: &str) -> Result<f64> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .with_context(|| format!("no line `{prefix}…`"))?;
    let number = line.split_whitespace().next().context("an empty line")?;
    number
        .parse()
        .with_context(|| format!("`{number}` after `{prefix}`"))
}

/// `memory_summary()`'s row `name`: its column `col` (0: current, 1: peak), in KiB.
fn summary_kib(text: &str, name: &str, col: usize) -> Result<u64> {
    let line = text
        .lines()
        .find(|l| l.trim_start_matches('|').trim_start().starts_with(name))
        .with_context(|| format!("no summary row `{name}`"))?;
    let cell = line.split('|').nth(2 + col).context("a short row")?;
    let kib = cell
        .trim()
        .strip_suffix("KiB")
        .with_context(|| format!("`{cell}` is not in KiB"))?;
    Ok(kib.trim().parse()?)
}

/// The card's compute capability, from the same run's Challenge 1 record (the snippet's record
/// names the card, not its capability).
fn capability(gpu: &str) -> Result<ComputeCapability> {
    let path = super::super::gpu_h200::evidence_dir().join("part2/pytorch/challenge1_cuda.json");
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text)?;
    let env = &v["environment"];
    ensure!(
        env["gpu_name"] == gpu,
        "Challenge 1's record is not from the {gpu}"
    );
    let cc = &env["gpu_capability"];
    let n = |i: usize| cc[i].as_u64().context("gpu_capability");
    Ok(format!("{}.{}", n(0)?, n(1)?).parse()?)
}

/// The two records' figures.
struct Records {
    torch: String,
    gpu: String,
    cpu_tracker: f64,
    cuda_tracker: f64,
    after: f64,
    peak: f64,
    requested_peak_kib: u64,
    allocated_peak_kib: u64,
}

fn records() -> Result<Records> {
    let cuda = record("runs-cuda/snippets__memory_stats.txt")?;
    let cpu = record("runs/snippets__memory_stats.txt")?;
    // `# torch 2.11.0+cu130, CUDA 13.0, Python 3.12.3, NVIDIA H200, exit 0`
    let header = cuda
        .lines()
        .find_map(|l| l.strip_prefix("# torch "))
        .context("the CUDA record names no torch")?;
    let fields: Vec<&str> = header.split(", ").collect();
    ensure!(fields.len() >= 4, "the CUDA record's header: `{header}`");
    Ok(Records {
        torch: fields[0].to_string(),
        gpu: fields[3].to_string(),
        cpu_tracker: mib_after(&cpu, "peak of live tensors:")?,
        cuda_tracker: mib_after(&cuda, "peak of live tensors:")?,
        after: mib_after(&cuda, "allocated")?,
        peak: mib_after(&cuda, "peak  ")?,
        requested_peak_kib: summary_kib(&cuda, "Requested memory", 1)?,
        allocated_peak_kib: summary_kib(&cuda, "Allocated memory", 1)?,
    })
}

/// The card of the H200 record and its PyTorch's rules: its name, the rules, its compute
/// capability (the allocator quiz's real card).
pub(crate) fn record_card() -> Result<(String, Rules, ComputeCapability)> {
    let r = records()?;
    let rules = Rules::of(r.torch.parse()?);
    let cc = capability(&r.gpu)?;
    Ok((r.gpu, rules, cc))
}

/// The snippet's step planned by the engine under `rules` on a card of `capability`:
/// `max_memory_allocated()` of the step after the reset.
fn engine_peak(rules: Rules, capability: ComputeCapability) -> Result<u64> {
    let mut options = planning_unlimited();
    options.cublas = rules.workspaces(capability);
    let device = Device::new(&options)?;
    let mut config = MlpConfig::lesson(WIDTH).with_optimizer(Optimizer::adam(LR));
    config.strategy.zero_grad = rules.release.zero_grad;
    config.strategy.optimizer_impl = rules.release.optimizer_impl;
    let mut mlp = Mlp::new(&device, &config, SEED)?;
    for _ in 0..STEPS_BEFORE_RESET {
        mlp.train_step(Batch::Planned(ROWS))?;
    }
    device.reset_peak_memory_stats();
    mlp.train_step(Batch::Planned(ROWS))?;
    Ok(device.max_memory_allocated())
}

/// The page's sentence: where CUDA's peak goes beyond MemTracker's.
pub fn reconciled() -> Result<String> {
    let r = records()?;
    let version: TorchVersion = r.torch.parse()?;
    let rules = Rules::of(version);
    let cc = capability(&r.gpu)?;
    let w = rules.workspaces(cc);
    ensure!(
        w.cublas > 0 && w.lt > 0,
        "PyTorch {} on {cc}: no workspaces in the allocator",
        r.torch
    );
    // Each of the two threads' handles takes cuBLAS's workspace; the forward pass's
    // `nn.Linear` (a product with a bias) goes through cuBLASLt on the main thread.
    let workspaces = 2 * w.cublas + w.lt;
    let mib = |b: u64| b as f64 / MIB;
    let requested = mib(r.requested_peak_kib * 1024);
    let rounding = mib((r.allocated_peak_kib - r.requested_peak_kib) * 1024);
    let tensors = requested - mib(workspaces);
    let unexplained = tensors - r.cuda_tracker - mib(INPUT_BYTES);
    ensure!(
        unexplained.abs() < 0.05 && (r.peak - requested - rounding).abs() < 0.01,
        "the CUDA record's peak does not add up: {tensors:.2} MiB of tensors against \
         MemTracker's {:.2} MiB",
        r.cuda_tracker
    );
    let (first, after) = workspace_versions()?;
    Ok(format!(
        "CUDA's peak, {peak:.2} MiB, counts the allocator's blocks; MemTracker's {cpu:.2} MiB \
         ({gpu:.2} on the {card}) counts tensors. PyTorch {torch}, like every release from \
         {first} until {after} by our reading, takes cuBLAS's workspaces from the cache: \
         {ws:.2} MiB here ({cublas:.2} MiB for each of the two threads' handles, {lt:.2} MiB \
         for cuBLASLt's), nearly all of the {after_step:.2} MiB left after the step. Rounding \
         to whole blocks adds {rounding:.2} MiB, and the batch, made before MemTracker \
         started, {rest:.2} MiB.\n",
        cpu = r.cpu_tracker,
        gpu = r.cuda_tracker,
        card = r.gpu,
        peak = r.peak,
        torch = version,
        ws = mib(workspaces),
        cublas = mib(w.cublas),
        lt = mib(w.lt),
        after_step = r.after,
        rest = tensors - r.cuda_tracker,
    ))
}

/// The engine's side (the allocator page, beside the H200's Challenge 1): the snippet's step
/// planned under the record's PyTorch and card, against the card's peak.
pub fn engine_check() -> Result<String> {
    let r = records()?;
    let rules = Rules::of(r.torch.parse()?);
    let cc = capability(&r.gpu)?;
    let engine = engine_peak(rules, cc)? as f64 / MIB;
    ensure!(
        (engine - r.peak).abs() < 0.5,
        "the engine's peak for the snippet, {engine:.2} MiB, is not the card's {:.2} MiB",
        r.peak
    );
    Ok(format!(
        "told the same PyTorch ({}) and compute capability ({cc}), the engine plans the step \
         of `pytorch/snippets/memory_stats.py` \
         ([Monitoring memory](monitoring.md#two-numbers-not-one)) at a peak of {engine:.2} MiB, \
         against the card's {:.2} MiB.\n",
        rules.asked, r.peak
    ))
}

/// The first release whose cuBLAS workspaces come from the caching allocator, and the first
/// after it whose (cuBLAS's own) do not, from the engine's versions table.
fn workspace_versions() -> Result<(TorchVersion, TorchVersion)> {
    use gpumem::versions::{DEFAULT_COMPUTE_CAPABILITY, KNOWN};
    let in_allocator =
        |v: TorchVersion| Rules::of(v).workspaces(DEFAULT_COMPUTE_CAPABILITY).cublas > 0;
    let first = KNOWN
        .iter()
        .map(|r| r.version)
        .find(|&v| in_allocator(v))
        .context("no version takes cuBLAS's workspace from the allocator")?;
    let after = KNOWN
        .iter()
        .map(|r| r.version)
        .find(|&v| v > first && !in_allocator(v))
        .context("no version gives cuBLAS's workspace back")?;
    Ok((first, after))
}
