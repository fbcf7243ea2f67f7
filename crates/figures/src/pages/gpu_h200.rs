//! The first run on a GPU: an NVIDIA H200 with PyTorch 2.11, 2026-11-28
//! (`reference/pytorch/gpu/2026-11-28-h200/`, whose README says what each file is). What the
//! book quotes of it (the introduction, the allocator page, "Your own model, further"): the
//! card's figures read from the committed records, its snapshots replayed here with
//! `memviz replay`, the engine's side planned here. Nothing PyTorch reported is typed; a
//! sentence that says two figures agree fails to render when they do not.

use anyhow::{Context, Result, bail, ensure};
use charts::style::grouped;
use gpumem::lesson::CardChoice;
use gpumem::size::format_bytes;
use gpumem::versions::{ComputeCapability, KNOWN, Rules, TorchVersion};
use gpumem_replay::{ReplayReport, ReplaySettings};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The run's records (PyTorch's output, and the carried programs' beside it).
pub fn evidence_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../reference/pytorch/gpu/2026-11-28-h200")
}

/// The run's snapshots, memviz's real-GPU fixtures.
pub fn snapshots_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../memviz/tests/fixtures/gpu/2026-11-28-h200")
}

fn record(rel: &str) -> Result<Value> {
    let path = evidence_dir().join(rel);
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    serde_json::from_str(&text).with_context(|| path.display().to_string())
}

fn num(v: &Value) -> Result<u64> {
    v.as_u64().with_context(|| format!("{v} is not a count"))
}

/// The replay of one of the run's snapshots on a card of `capacity` bytes.
fn replay(snapshot: &str, capacity: u64) -> Result<ReplayReport> {
    let settings = ReplaySettings {
        card: CardChoice::Bytes(capacity),
        ..ReplaySettings::default()
    };
    super::own_model::replay_file(&snapshots_dir().join(snapshot), settings)
}

/// The card and the PyTorch of the recorded H200 run, as Challenge 1's record names them.
struct RecordedCard {
    name: String,
    capability: ComputeCapability,
    /// `torch.__version__`, e.g. `2.11.0+cu130`.
    torch: String,
    version: TorchVersion,
}

fn card() -> Result<RecordedCard> {
    let env = &record("part2/pytorch/challenge1_cuda.json")?["environment"];
    let cc = &env["gpu_capability"];
    let capability = format!("{}.{}", num(&cc[0])?, num(&cc[1])?).parse()?;
    let torch = env["torch_version"]
        .as_str()
        .context("torch_version")?
        .to_string();
    Ok(RecordedCard {
        name: env["gpu_name"].as_str().context("gpu_name")?.to_string(),
        capability,
        version: torch.parse()?,
        torch,
    })
}

/// One model of the recorder's set, run for real on the card (part 5).
struct RealStep {
    name: String,
    steps: u64,
    max_allocated: u64,
    max_reserved: u64,
    /// `memviz replay` of the card's own snapshot, on the card.
    snapshot: ReplayReport,
    /// `memviz replay` of the recorder's CPU recording of the same step (its committed
    /// fixture), as that card: its capacity, PyTorch and compute capability.
    recording: ReplayReport,
    /// What the recording says a GPU does that it could not record, when the replay differs.
    lacks: Option<String>,
    /// The compute capability the recording's kernels are CUDA's for.
    recorded_for: String,
}

fn real_steps() -> Result<Vec<RealStep>> {
    let c = card()?;
    let mut names: Vec<String> = std::fs::read_dir(evidence_dir().join("part5"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .filter(|n| !n.ends_with(".replay"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let r = record(&format!("part5/{name}.json"))?;
        ensure!(r["device"] == "cuda", "{name}: not a CUDA run");
        ensure!(
            r["torch"] == c.torch.as_str() && r["compute_capability"] == c.capability.to_string(),
            "{name}: another card or PyTorch than Challenge 1's"
        );
        let capacity = num(&r["total_memory"])?;
        let snapshot = r["snapshot"].as_str().context("snapshot")?;
        let snapshot = replay(snapshot, capacity)?;
        let fixture = super::own_model::recorded_dir().join(format!("{name}.pickle"));
        let recorded = gpumem::snapshot::Snapshot::read(&fixture)?;
        let rec = recorded
            .recorder
            .as_ref()
            .with_context(|| format!("{name}: the recorder's fixture has no recording"))?;
        let (steps, batch) = (num(&r["steps"])?, num(&r["batch"])?);
        ensure!(
            rec.batch == batch && rec.steps == steps,
            "{name}: the recorder's fixture is not the real run's step"
        );
        let as_the_card = ReplaySettings {
            card: CardChoice::Bytes(capacity),
            torch: Some(c.version),
            compute_capability: Some(c.capability),
            ..ReplaySettings::default()
        };
        let recording = super::own_model::replay(&name, as_the_card)?;
        // The recorder's own words for what a GPU takes that its recording has not: cuDNN's
        // buffers (`not_in_trace`), or what a kernel recorded as CUDA's leaves out
        // (`approximate`).
        let lacks = rec
            .not_in_trace
            .first()
            .map(|t| t.split([';', '(']).next().unwrap_or(t).trim().to_string())
            .or_else(|| {
                rec.approximate
                    .first()
                    .map(|a| format!("`{}`: {}", a.kernel, a.what))
            });
        out.push(RealStep {
            name,
            steps,
            max_allocated: num(&r["max_memory_allocated"])?,
            max_reserved: num(&r["max_memory_reserved"])?,
            snapshot,
            recording,
            lacks,
            recorded_for: rec.card_capability.clone(),
        });
    }
    ensure!(!out.is_empty(), "no real steps in part5/");
    Ok(out)
}

/// Whether every replay of a card's own snapshot gave its card's peaks.
fn all_equal(steps: &[RealStep]) -> Result<bool> {
    for s in steps {
        if s.snapshot.peak_allocated != s.max_allocated
            || s.snapshot.peak_reserved != s.max_reserved
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The introduction's sentence: what one GPU has checked.
pub fn checked() -> Result<String> {
    let steps = real_steps()?;
    ensure!(
        all_equal(&steps)?,
        "a real step's replay differs from its card: the introduction's claim is stale"
    );
    let c = card()?;
    Ok(format!(
        "on one {} with PyTorch {}, the allocator's traces of {} real training steps, replayed \
         through the engine's, gave the card's own peak allocated and reserved memory to the byte",
        c.name,
        c.version,
        steps.len()
    ))
}

/// A replay's figure beside the card's: `same`, or how far off it is.
fn beside(replayed: u64, card: u64) -> String {
    if replayed == card {
        "same".into()
    } else {
        charts::style::signed(replayed as i64 - card as i64)
    }
}

/// "Your own model, further": each model run for real, the replay of its own snapshot, and
/// the replay of the recorder's CPU recording of the same step, as that card.
pub fn models_table() -> Result<String> {
    let steps = real_steps()?;
    ensure!(
        all_equal(&steps)?,
        "a real step's replay differs from its card: the table's reading is stale"
    );
    let c = card()?;
    let mut out = String::from(
        "| model | max allocated | recording | max reserved | recording |\n\
         |---|---:|---:|---:|---:|\n",
    );
    let mut equal = 0;
    let mut lacking = Vec::new();
    for s in &steps {
        let (alloc, res) = (s.recording.peak_allocated, s.recording.peak_reserved);
        if alloc == s.max_allocated && res == s.max_reserved {
            equal += 1;
        } else {
            let why = s
                .lacks
                .as_deref()
                .with_context(|| format!("{}: the recording differs and says nothing", s.name))?;
            lacking.push(format!("`{}`: {why}", s.name));
        }
        writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            s.name,
            grouped(s.max_allocated),
            beside(alloc, s.max_allocated),
            grouped(s.max_reserved),
            beside(res, s.max_reserved),
        )?;
    }
    let capacity = num(&record("part5/lesson_sgd.json")?["total_memory"])?;
    let step_counts: Vec<u64> = steps.iter().map(|s| s.steps).collect();
    ensure!(
        step_counts.windows(2).all(|w| w[0] == w[1]),
        "the models ran different numbers of steps: {step_counts:?}"
    );
    let recorded_for = &steps[0].recorded_for;
    ensure!(
        steps.iter().all(|s| &s.recorded_for == recorded_for),
        "the recordings are for different cards"
    );
    writeln!(
        out,
        "\nBytes. The card's figures are `max_memory_allocated()` and `max_memory_reserved()` \
         over {} training steps of each model, run for real, each in a fresh process, on {} \
         (compute capability {}) with PyTorch {} (`reference/pytorch/real_step.py`, at the \
         batch the recorder records, as above); each snapshot it took, replayed with `memviz replay \
         NAME.pickle --card {}`, gives both figures to the byte. The recording column is the \
         recorder's committed fixture, made on a CPU without a GPU for compute capability {} \
         (CUDA's kernels substituted where they allocate differently), replayed as that card \
         (`--card {} --torch {} --compute-capability {}`, which adds the workspaces), against \
         the card's figure. {} of {} recordings give \
         the card's figures to the byte. The others say, in the recorder's words, what the \
         recording lacks: {}.",
        step_counts[0],
        with_article(&c.name),
        c.capability,
        c.torch,
        capacity,
        recorded_for,
        capacity,
        c.version,
        c.capability,
        equal,
        steps.len(),
        lacking.join("; "),
    )?;
    Ok(out)
}

/// `challenge1 --backend plan ARGS --json`, from the demos' library.
fn challenge1(args: &[&str]) -> Result<Value> {
    let mut all: Vec<String> = ["challenge1", "--backend", "plan"]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect();
    all.push("--json".into());
    let (result, text) = cli::capture(|| demos::challenge1::run(all.clone()));
    result?;
    Ok(serde_json::from_str(&text)?)
}

/// The failure of a replay: (tried, allocated, reserved but unallocated).
fn failure_figures(r: &ReplayReport) -> Result<(u64, u64, u64)> {
    let f = r
        .failure
        .as_ref()
        .with_context(|| format!("the replay of {} fits", r.file))?;
    Ok((f.requested, f.allocated, f.reserved - f.allocated))
}

/// Allocator page: Challenge 1 on the H200 against the engine, with and without workspaces.
pub fn challenge1_table() -> Result<String> {
    let c = card()?;
    let full = record("part2/pytorch/challenge1_cuda.json")?;
    let bisect = &full["stages"]["bisect"];
    ensure!(bisect["exact"] == true, "PyTorch's bisection is not exact");
    let pytorch = num(&bisect["largest_known_to_fit"])?;
    let not = num(&bisect["smallest_known_not_to_fit"])?;
    let torch = c.version.to_string();
    let cc = c.capability.to_string();
    let largest =
        |args: &[&str]| -> Result<u64> { num(&challenge1(args)?["largest_batch_that_fits"]) };
    let ideal = largest(&[])?;
    let pre_hopper = largest(&["--torch", &torch])?;
    let as_card = largest(&["--torch", &torch, "--compute-capability", &cc])?;
    ensure!(
        as_card == pytorch,
        "the engine told the card's PyTorch says {as_card}, PyTorch {pytorch}"
    );
    let rules = Rules::of(c.version);
    let ws = |cc: ComputeCapability| rules.workspaces(cc).cublas;
    let default_cc = gpumem::versions::DEFAULT_COMPUTE_CAPABILITY;
    let mut out =
        String::from("| the card | largest batch that fits | asked of |\n| :--- | ---: | :--- |\n");
    let capacity = gpumem::lesson::CARD_BYTES;
    writeln!(
        out,
        "| the ideal card: {}, all of it for tensors | {} | the engine: `cargo run -p challenge1` |",
        format_bytes(capacity),
        grouped(ideal)
    )?;
    writeln!(
        out,
        "| the same with PyTorch {torch}'s workspaces, before Hopper ({} per cuBLAS handle) | {} \
         | the engine: `cargo run -p challenge1 -- --torch {torch}` |",
        size(ws(default_cc)),
        grouped(pre_hopper)
    )?;
    writeln!(
        out,
        "| the same at compute capability {cc} ({} per cuBLAS handle) | {} | the engine: \
         `cargo run -p challenge1 -- --torch {torch} --compute-capability {cc}` |",
        size(ws(c.capability)),
        grouped(as_card)
    )?;
    writeln!(
        out,
        "| {} held to {} for its allocator alone, PyTorch {} | **{}** ({} does not fit) | PyTorch: \
         `reference/pytorch/challenge1_cuda.py`, bisected on the card |",
        with_article(&c.name),
        format_bytes(num(&full["card"]["allowed_bytes"])?),
        c.torch,
        grouped(pytorch),
        grouped(not)
    )?;
    // The ideal card's answer on the real card, in a fresh process: PyTorch's message and
    // the replay of the snapshot it took at that moment.
    let at =
        record(&format!("challenge1-fresh/r{ideal}/challenge1_cuda.json")).with_context(|| {
            format!("no fresh-process run of the ideal card's answer, {ideal} rows")
        })?;
    let attempt = &at["stages"]["attempt"];
    ensure!(attempt["fits"] == false, "{ideal} rows fit on the card");
    let message = attempt["oom_message"].as_str().context("oom_message")?;
    let allowance = num(&at["card"]["allowed_bytes"])?;
    let r = replay(&format!("challenge1_r{ideal}.pickle"), allowance)?;
    let (tried, allocated, unallocated) = failure_figures(&r)?;
    let words = [
        format!("Tried to allocate {}", format_bytes(tried)),
        format!("{} is allocated by PyTorch", format_bytes(allocated)),
        format!(
            "{} is reserved by PyTorch but unallocated",
            format_bytes(unallocated)
        ),
    ];
    for w in &words {
        ensure!(
            message.contains(w.as_str()),
            "the replay's {w:?} is not in PyTorch's message: {message}"
        );
    }
    writeln!(
        out,
        "\nAt {} rows, the ideal card's answer, PyTorch ran out in {}:\n\n```text\n{message}\n```\n",
        grouped(ideal),
        phase_words(attempt["failed_in"].as_str().context("failed_in")?)?,
    )?;
    writeln!(
        out,
        "The snapshot PyTorch dumped at that moment, replayed through the engine's allocator on \
         a card of {} (`memviz replay`), runs out at the same request with the same figures: \
         {} tried, {} allocated, {} reserved but unallocated.",
        format_bytes(num(&at["card"]["allowed_bytes"])?),
        format_bytes(tried),
        format_bytes(allocated),
        format_bytes(unallocated)
    )?;
    Ok(out)
}

/// `step 1 backward` (challenge1_cuda.py's phase) as `the backward pass of step 1`.
fn phase_words(phase: &str) -> Result<String> {
    match phase.split(' ').collect::<Vec<_>>()[..] {
        ["step", n, pass] => Ok(format!("the {pass} pass of step {n}")),
        _ => bail!("a phase that is not `step N PASS`: {phase}"),
    }
}

/// Allocator page, after the versions' table: what the H200 measured of the workspaces.
pub fn workspaces() -> Result<String> {
    let c = card()?;
    let probe = record("part2/pytorch_probe/challenge1_cuda.json")?;
    let freed = num(
        &probe["stages"]["probe"]["workspaces_freed_by_clearing"]["forward_backward"]["freed_by_clearing"],
    )?;
    let torch = c.version.to_string();
    let cc = c.capability.to_string();
    let engine = challenge1(&["--torch", &torch, "--compute-capability", &cc])?;
    let planned = num(&engine["attempt"]["estimate"]["workspaces"])?;
    ensure!(
        planned == freed,
        "the engine plans {planned} B of workspaces for PyTorch {torch} at {cc}, the card freed {freed} B"
    );
    let rules = Rules::of(c.version);
    let w = rules.workspaces(c.capability);
    let newest = KNOWN[KNOWN.len() - 1].version;
    Ok(format!(
        "One row has been checked on a GPU: {} (compute capability {cc}) with PyTorch {}, which \
         takes the {} row. After a forward and backward pass of Challenge 1's network at batch {} \
         in a fresh process, `torch._C._cuda_clearCublasWorkspaces()` freed {}; the engine's step, told that version \
         and capability, holds {}: {} for each thread's cuBLAS handle and {} for cuBLASLt's. The \
         {newest} row has not run on a GPU yet.\n",
        with_article(&c.name),
        c.torch,
        rules.release.version,
        num(&probe["stages"]["probe"]["rows"])?,
        size(freed),
        size(planned),
        size(w.cublas),
        size(w.lt),
    ))
}

/// A workspace's size as the allocator page writes them: whole MiB (`32 MiB`), else PyTorch's
/// two decimals (`8.12 MiB`).
fn size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes > 0 && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format_bytes(bytes)
    }
}

/// `an NVIDIA H200`.
fn with_article(name: &str) -> String {
    let vowel = name
        .chars()
        .next()
        .is_some_and(|ch| "AEFHILMNORSX".contains(ch));
    format!("{} {name}", if vowel { "an" } else { "a" })
}

/// Allocator page, on scratch memory: part 1's setups, the engine against the card.
pub fn untracked() -> Result<String> {
    use gpumem::pytorch::Fixture;
    let c = card()?;
    let path = evidence_dir().join("part1/cuda_step_peaks.json");
    let fixture = Fixture::load(&path).map_err(anyhow::Error::msg)?;
    let raw = record("part1/cuda_step_peaks.json")?;
    let raw_setups = raw["setups"].as_array().context("setups")?;
    let options = gpumem::DeviceOptions {
        cublas: Rules::of(c.version).workspaces(c.capability),
        ..gpumem::lesson::planning_unlimited()
    };
    let plain = gpumem::lesson::planning_unlimited();
    let (mut modelled, mut equal, mut above) = (0u64, 0u64, 0u64);
    let mut below: Vec<u64> = Vec::new();
    for (s, raw) in fixture.setups.iter().zip(raw_setups) {
        ensure!(raw["name"] == s.name.as_str(), "the setups' order");
        let Ok(config) = s.config() else { continue };
        modelled += 1;
        let engine = gpumem::measure::measure_step(&options, &config, s.batch, 0)?.peak_allocated;
        let pytorch = s.peak_bytes;
        if engine == pytorch {
            equal += 1;
        } else if engine > pytorch {
            above += 1;
        } else {
            below.push(pytorch - engine);
            // MemTracker, on the same CUDA tensors, sees no more than the engine's tensors.
            let tensors_only = gpumem::measure::measure_step(&plain, &config, s.batch, 0)?;
            let tracked = num(&raw["memtracker_peak_bytes"])?;
            ensure!(
                tracked <= tensors_only.peak_allocated,
                "{}: MemTracker sees {tracked} B, the engine's tensors {} B",
                s.name,
                tensors_only.peak_allocated
            );
            // Where PyTorch's peak fell: the phase of the larger step maximum.
            for step in raw["step_peaks"].as_array().context("step_peaks")? {
                let phases = step["phase_max_memory_allocated"]
                    .as_object()
                    .context("phase_max_memory_allocated")?;
                let (phase, _) = phases
                    .iter()
                    .max_by_key(|(_, v)| v.as_u64().unwrap_or(0))
                    .context("no phases")?;
                ensure!(
                    phase == "backward",
                    "{}: PyTorch's peak is in {phase}, not the backward pass",
                    s.name
                );
            }
        }
    }
    ensure!(
        above == 0,
        "the engine plans more than the card on {above} setups"
    );
    let (Some(lo), Some(hi)) = (below.iter().min(), below.iter().max()) else {
        bail!("no setup above the engine: the paragraph is stale");
    };
    Ok(format!(
        "The H200 run suggests it. Of the {} setups of `step_peaks.py` that the engine models, \
         run on that card with PyTorch {} and planned with its workspaces, {} peak at the \
         engine's figure to the byte; in the other {}, PyTorch's `max_memory_allocated()` is \
         {} to {} higher, always in the backward pass, and the engine is never the higher. \
         PyTorch's own MemTracker, run beside on the same card, does not see those bytes either: \
         no tensor holds them. Which kernels take them the run cannot say \
         (`reference/notes/gpu-h200-step-peaks.md`).\n",
        modelled,
        c.torch,
        equal,
        below.len(),
        format_bytes(*lo),
        format_bytes(*hi),
    ))
}
