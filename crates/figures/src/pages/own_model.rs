//! "Your own model" (`own-model.md`, the core) and its going-further page
//! (`own-model-further.md`): `memviz replay` on the recorder's committed model set
//! (`crates/gpumem/tests/fixtures/recorded/`, made by `reference/pytorch/record_models.py`),
//! run here from the committed pickles, so no PyTorch is needed and a stale table fails the
//! `generated` check. The cards (16 GiB and 80 GiB), the PyTorch (2.15) and the compute
//! capabilities (7.0, 9.0) are inputs we chose, and the pages say so.

use anyhow::{Context, Result, anyhow, bail};
use charts::style::grouped;
use gpumem::alloc_conf::{AllocConf, Overrides};
use gpumem::lesson::CardChoice;
use gpumem::size::format_bytes;
use gpumem::snapshot::Snapshot;
use gpumem::versions::{ComputeCapability, TorchVersion};
use gpumem_replay::{Largest, ReplayReport, ReplaySettings};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the recorded models are.
pub fn recorded_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../gpumem/tests/fixtures/recorded")
}

/// The model the core page replays, and the batch of its what-ifs.
pub const EXAMPLE: &str = "transformer_encoder";

/// The two cards of the model table, with the compute capability we give each: a 16 GiB
/// card of Volta's generation and an 80 GiB Hopper (inputs, not measurements).
pub const CARDS: [(u64, ComputeCapability); 2] = [
    (16 * GIB, ComputeCapability { major: 7, minor: 0 }),
    (80 * GIB, ComputeCapability { major: 9, minor: 0 }),
];

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// The PyTorch whose workspaces the tables add: the one that recorded the models.
pub const TORCH: TorchVersion = TorchVersion::new(2, 15);

/// The models, sorted, from the committed pickles.
pub fn models() -> Result<Vec<String>> {
    let mut out: Vec<String> = std::fs::read_dir(recorded_dir())
        .context("the recorded models")?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".pickle").map(str::to_string))
        .collect();
    out.sort();
    Ok(out)
}

/// The replay of the snapshot at `path` (named by its path) as `settings` ask.
pub fn replay_file(path: &Path, settings: ReplaySettings) -> Result<ReplayReport> {
    let snap = Snapshot::read(path)?;
    let settings = ReplaySettings {
        name: path.display().to_string(),
        ..settings
    };
    gpumem_replay::replay(&snap, &settings)
        .with_context(|| format!("the replay of {}", path.display()))
}

/// The replay of a recorded model as `settings` ask.
pub fn replay(model: &str, settings: ReplaySettings) -> Result<ReplayReport> {
    replay_file(&recorded_dir().join(format!("{model}.pickle")), settings)
}

/// A card of `bytes`, its largest batch searched.
fn largest_on(bytes: u64) -> ReplaySettings {
    ReplaySettings {
        card: CardChoice::Bytes(bytes),
        largest_batch: true,
        ..ReplaySettings::default()
    }
}

fn num(v: &Value) -> Result<u64> {
    v.as_u64().with_context(|| format!("{v} is not a count"))
}

/// The largest batch of a replay, in words.
fn largest(r: &ReplayReport) -> Result<String> {
    Ok(match r.largest_batch.map(|l| l.answer) {
        Some(Largest::Batch(b)) => grouped(b),
        Some(Largest::Unbounded) => "any".into(),
        Some(Largest::None) => "none".into(),
        None => bail!("no largest batch in the replay of {}", r.file),
    })
}

/// The core page's replay widget: the page's replay (theme/replay.js) with the shipped
/// recording named by its path from the repository's root, so the command line it shows runs
/// there; inside it, for readers without WebAssembly, what it answers for that recording as
/// the page starts (the 16 GB card, the largest batch where possible) — its text and its
/// command line, from the page's own module code.
pub fn example_replay() -> Result<String> {
    let path = recorded_dir().join(format!("{EXAMPLE}.pickle"));
    // The path as typed from the repository's root, where the command line runs.
    let root = crate::book::book_src().join("..").canonicalize()?;
    let shown = path
        .canonicalize()?
        .strip_prefix(&root)
        .context("the recordings are outside the repository")?
        .to_str()
        .context("a path that is not UTF-8")?
        .to_string();
    let presets = gpumem_replay_page::presets::Presets::new();
    let request = gpumem_replay_page::Request {
        name: shown.clone(),
        card: presets.default_card,
        largest_batch_when_possible: true,
        ..gpumem_replay_page::Request::default()
    };
    let answer = gpumem_replay_page::replay(&request, &std::fs::read(&path)?, &mut |_| {})
        .map_err(anyhow::Error::msg)?;
    let text = answer["text"]
        .as_str()
        .context("the page's answer has no text")?;
    let command = answer["command"]
        .as_str()
        .context("the page's answer has no command")?;
    Ok(format!(
        "<div class=\"gpumem-replay\" data-sample=\"replay/{EXAMPLE}.pickle\" \
         data-sample-name=\"{shown}\" data-sample-label=\"(a transformer encoder layer's step, \
         recorded at batch 4)\">\n\
         <p class=\"replay-fallback\">The replay needs JavaScript and WebAssembly, and a book \
         served by <code>mdbook serve</code>. Without them, this is its answer for the shipped \
         recording on the 16 GB card:</p>\n\n\
         ```text\n{text}```\n\n\
         The same question on the command line:\n\n\
         ```text\n{command}\n```\n\n\
         </div>\n",
    ))
}

/// The example's largest batch on a 16 GiB card, e.g. `930 246`.
pub fn example_largest() -> Result<String> {
    largest(&replay(EXAMPLE, largest_on(16 * GIB))?)
}

/// The model set on two cards: the recorded batch and its peaks, and the largest batch.
pub fn model_cards() -> Result<String> {
    let mut out = String::from(
        "| model | recorded at batch | peak allocated there | largest batch, 16 GiB (7.0) | largest batch, 80 GiB (9.0) |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for m in models()? {
        let mut cells = Vec::new();
        for (i, &(card, cc)) in CARDS.iter().enumerate() {
            let settings = ReplaySettings {
                torch: Some(TORCH),
                compute_capability: Some(cc),
                ..largest_on(card)
            };
            let v = replay(&m, settings)?;
            if i == 0 {
                let batch = v
                    .batch
                    .context("a recorded model replayed without its batch")?;
                cells.push(grouped(batch));
                cells.push(format_bytes(v.peak_allocated));
            }
            cells.push(largest(&v)?);
        }
        out += &format!("| `{m}` | {} |\n", cells.join(" | "));
    }
    Ok(out)
}

/// The example at its largest batch on 16 GiB, asked what-ifs: fits, peak reserved, and the
/// largest batch under each.
pub fn what_ifs() -> Result<String> {
    let base = replay(EXAMPLE, largest_on(16 * GIB))?;
    let batch = match base.largest_batch.map(|l| l.answer) {
        Some(Largest::Batch(b)) => b,
        _ => bail!("the example has no largest batch on 16 GiB"),
    };
    let at = ReplaySettings {
        batch: Some(batch),
        ..largest_on(16 * GIB)
    };
    let conf = |text: &str| -> Result<ReplaySettings> {
        let conf: AllocConf = text.parse().map_err(|e: String| anyhow!(e))?;
        Ok(ReplaySettings {
            allocator: Overrides {
                alloc_conf: Some(conf),
                ..Overrides::default()
            },
            ..at.clone()
        })
    };
    let rows: [(&str, ReplaySettings); 8] = [
        ("as recorded (PyTorch 2.15, its workspaces)", at.clone()),
        (
            "`--context-memory 500MiB` (a CUDA context)",
            ReplaySettings {
                context_memory: Some(500 * MIB),
                ..at.clone()
            },
        ),
        (
            "`--alloc-conf expandable_segments:True`",
            conf("expandable_segments:True")?,
        ),
        (
            "`--alloc-conf max_split_size_mb:128`",
            conf("max_split_size_mb:128")?,
        ),
        (
            "`--memory-fraction 0.9`",
            ReplaySettings {
                allocator: Overrides {
                    memory_fraction: Some(0.9),
                    ..Overrides::default()
                },
                ..at.clone()
            },
        ),
        (
            "`--torch 1.12` (no workspace in the allocator)",
            ReplaySettings {
                torch: Some(TorchVersion::new(1, 12)),
                ..at.clone()
            },
        ),
        (
            "`--torch 2.1` (both workspaces, cuBLASLt's per call)",
            ReplaySettings {
                torch: Some(TorchVersion::new(2, 1)),
                ..at.clone()
            },
        ),
        (
            "`--card 24GiB`",
            ReplaySettings {
                card: CardChoice::Bytes(24 * GIB),
                ..at.clone()
            },
        ),
    ];
    let mut out = format!(
        "| at batch {} | fits? | peak reserved | largest batch |\n|---|---|---:|---:|\n",
        grouped(batch)
    );
    for (what, settings) in rows {
        let v = replay(EXAMPLE, settings)?;
        let fits = match &v.failure {
            None => "fits".to_string(),
            Some(f) => format!(
                "out of memory at entry {} (`{}`)",
                f.entry.map_or("null".to_string(), |e| e.to_string()),
                f.tensor
            ),
        };
        out += &format!(
            "| {what} | {fits} | {} | {} |\n",
            format_bytes(v.peak_reserved),
            largest(&v)?
        );
    }
    Ok(out)
}

/// Each recorded model's raw peak as memviz reads it from the pickle, against its committed
/// MemTracker run (`NAME.memtracker.json`): the difference and its explanation.
pub fn memtracker_table() -> Result<String> {
    let mut out = String::from(
        "| model | recorded peak (raw bytes) | MemTracker | difference |\n|---|---:|---:|---|\n",
    );
    for m in models()? {
        let snap = gpumem::snapshot::Snapshot::read(&recorded_dir().join(format!("{m}.pickle")))?;
        let recorded = snap.summary(0, 0).peak_requested;
        let json: Value = serde_json::from_str(&std::fs::read_to_string(
            recorded_dir().join(format!("{m}.memtracker.json")),
        )?)?;
        let tracked = num(&json["memtracker_peak_bytes"])?;
        let diff = if recorded == tracked {
            "none".to_string()
        } else {
            let why: Vec<&str> = json["explained"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["evidence"].as_str())
                .collect();
            format!(
                "{} B: {}",
                charts::style::signed(recorded as i64 - tracked as i64),
                if why.is_empty() {
                    "UNEXPLAINED".into()
                } else {
                    why.join("; ")
                }
            )
        };
        out += &format!(
            "| `{m}` | {} | {} | {diff} |\n",
            grouped(recorded),
            grouped(tracked)
        );
    }
    let torch = serde_json::from_str::<Value>(&std::fs::read_to_string(
        recorded_dir().join(format!("{EXAMPLE}.memtracker.json")),
    )?)?["torch"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    out += &format!(
        "\nRecorded and tracked with PyTorch {torch} on the CPU \
         (`python reference/pytorch/record_models.py`); the peaks are read from the committed \
         files.\n"
    );
    Ok(out)
}

/// The recorder's lesson fixtures (`reference/pytorch/record_lesson.py`).
pub fn lesson_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../memviz/tests/fixtures/lesson")
}

/// The replay of a lesson fixture on the ideal card.
pub fn replay_lesson(name: &str, largest_batch: bool) -> Result<ReplayReport> {
    let settings = ReplaySettings {
        largest_batch,
        ..ReplaySettings::default()
    };
    replay_file(&lesson_dir().join(format!("{name}.pickle")), settings)
}

/// The two routes to the lesson's answers: what the replay of the recorder's traces says,
/// and what the engine's own searches say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LessonAnswers {
    pub replay_batch: Option<u64>,
    pub engine_batch: u64,
    /// For SGD, then Adam: the depth recorded at the engine's answer and one more, whether
    /// each fits on replay, and the engine's deepest.
    pub depths: Vec<(&'static str, u64, bool, bool, u64)>,
}

pub fn lesson_answers() -> Result<LessonAnswers> {
    use crate::data;
    let c1 = replay_lesson("c1_sgd", true)?;
    let replay_batch = c1.largest_batch.and_then(|l| l.batch);
    let engine_batch = super::largest_batch()?.rows;
    let mut depths = Vec::new();
    for (name, opt, file) in [
        ("SGD", gpumem::mlp::Optimizer::LESSON, "sgd"),
        ("Adam", data::adam(), "adam"),
    ] {
        let engine = data::deepest_fit(opt)?.layers;
        let lesson: Value =
            serde_json::from_str(&std::fs::read_to_string(lesson_dir().join("lesson.json"))?)?;
        let recorded_at = lesson["files"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with(&format!("c2_{file}_")))
            .filter_map(|(_, v)| v["overrides"]["LAYERS"].as_u64())
            .min()
            .with_context(|| format!("no c2_{file}_* in lesson.json"))?;
        let fits = |layers: u64| -> Result<bool> {
            Ok(replay_lesson(&format!("c2_{file}_{layers}"), false)?.fits)
        };
        depths.push((
            name,
            recorded_at,
            fits(recorded_at)?,
            fits(recorded_at + 1)?,
            engine,
        ));
    }
    Ok(LessonAnswers {
        replay_batch,
        engine_batch,
        depths,
    })
}

/// The table of [`lesson_answers`].
pub fn lesson_table() -> Result<String> {
    let a = lesson_answers()?;
    let mut out = String::from(
        "| the lesson's question (ideal card) | recorder + replay | the engine |\n|---|---|---:|\n",
    );
    out += &format!(
        "| Challenge 1: the largest batch | {} rows | {} rows |\n",
        a.replay_batch.map_or("none".into(), grouped),
        grouped(a.engine_batch)
    );
    for (name, at, fits, next, engine) in &a.depths {
        let word = |f: &bool| if *f { "fits" } else { "out of memory" };
        out += &format!(
            "| Challenge 2: the deepest, width 5 000, batch 32, {name} | {at} layers {}, {} {} | {engine} layers |\n",
            word(fits),
            at + 1,
            word(next)
        );
    }
    out += "\nRecorded with `python reference/pytorch/record_lesson.py`; the replays run on the \
            committed files.\n";
    Ok(out)
}
