//! "Your own model" (`own-model.md`, the core) and its going-further page
//! (`own-model-further.md`): `memviz replay` on the recorder's committed model set
//! (`crates/gpumem/tests/fixtures/recorded/`, made by `reference/pytorch/record_models.py`),
//! run here from the committed pickles, so no PyTorch is needed and a stale table fails the
//! `generated` check. The cards (16 GiB and 80 GiB), the PyTorch (2.15) and the compute
//! capabilities (7.0, 9.0) are inputs we chose, and the pages say so.

use anyhow::{Context, Result, bail};
use charts::style::grouped;
use gpumem::size::format_bytes;
use serde_json::Value;
use std::path::PathBuf;

/// Where the recorded models are.
pub fn recorded_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../gpumem/tests/fixtures/recorded")
}

/// The model the core page replays, and the batch of its what-ifs.
pub const EXAMPLE: &str = "transformer_encoder";

/// The two cards of the model table, with the compute capability we give each: a 16 GiB
/// card of Volta's generation and an 80 GiB Hopper (inputs, not measurements).
pub const CARDS: [(&str, &str); 2] = [("16GiB", "7.0"), ("80GiB", "9.0")];

/// The PyTorch whose workspaces the tables add: the one that recorded the models.
pub const TORCH: &str = "2.15";

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

/// `memviz replay MODEL.pickle ARGS --json`.
pub fn replay(model: &str, args: &[&str]) -> Result<Value> {
    let path = recorded_dir().join(format!("{model}.pickle"));
    let path = path.to_str().context("a path that is not UTF-8")?;
    let mut all = vec!["memviz", "replay", path, "--json"];
    all.extend_from_slice(args);
    let text = memviz::run(all).with_context(|| format!("memviz replay {model}"))?;
    Ok(serde_json::from_str(&text)?)
}

fn num(v: &Value) -> Result<u64> {
    v.as_u64().with_context(|| format!("{v} is not a count"))
}

/// The largest batch of a replay's JSON, in words.
fn largest(v: &Value) -> Result<String> {
    let l = &v["largest_batch"];
    Ok(match l["answer"].as_str() {
        Some("batch") => grouped(num(&l["batch"])?),
        Some("unbounded") => "any".into(),
        Some("none") => "none".into(),
        _ => bail!("no largest batch in {v}"),
    })
}

/// The core page's example: what `memviz replay` prints for the transformer on a 16 GiB card.
pub fn example_replay() -> Result<String> {
    let path = recorded_dir().join(format!("{EXAMPLE}.pickle"));
    let path = path
        .to_str()
        .context("a path that is not UTF-8")?
        .to_string();
    let printed = memviz::run([
        "memviz",
        "replay",
        &path,
        "--card",
        "16GiB",
        "--largest-batch",
    ])?;
    // The path as typed from the repository's root, where the page says to run it.
    let root = crate::book::book_src().join("..").canonicalize()?;
    let shown = recorded_dir()
        .canonicalize()?
        .join(format!("{EXAMPLE}.pickle"))
        .strip_prefix(&root)
        .context("the recordings are outside the repository")?
        .to_str()
        .context("a path that is not UTF-8")?
        .to_string();
    Ok(format!(
        "```text\n$ cargo run --release -p memviz -- replay {shown} --card 16GiB --largest-batch\n{}```\n",
        printed.replace(&path, &shown)
    ))
}

/// The example's largest batch on a 16 GiB card, e.g. `930 246`.
pub fn example_largest() -> Result<String> {
    largest(&replay(EXAMPLE, &["--card", "16GiB", "--largest-batch"])?)
}

/// The model set on two cards: the recorded batch and its peaks, and the largest batch.
pub fn model_cards() -> Result<String> {
    let mut out = String::from(
        "| model | recorded at batch | peak allocated there | largest batch, 16 GiB (7.0) | largest batch, 80 GiB (9.0) |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for m in models()? {
        let mut cells = Vec::new();
        for (i, (card, cc)) in CARDS.iter().enumerate() {
            let v = replay(
                &m,
                &[
                    "--card",
                    card,
                    "--torch",
                    TORCH,
                    "--compute-capability",
                    cc,
                    "--largest-batch",
                ],
            )?;
            if i == 0 {
                cells.push(grouped(num(&v["batch"])?));
                cells.push(format_bytes(num(&v["peak_allocated"])?));
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
    let base = replay(EXAMPLE, &["--card", "16GiB", "--largest-batch"])?;
    let batch = num(&base["largest_batch"]["batch"])?.to_string();
    let rows: [(&str, Vec<&str>); 8] = [
        ("as recorded (PyTorch 2.15, its workspaces)", vec![]),
        (
            "`--context-memory 500MiB` (a CUDA context)",
            vec!["--context-memory", "500MiB"],
        ),
        (
            "`--alloc-conf expandable_segments:True`",
            vec!["--alloc-conf", "expandable_segments:True"],
        ),
        (
            "`--alloc-conf max_split_size_mb:128`",
            vec!["--alloc-conf", "max_split_size_mb:128"],
        ),
        ("`--memory-fraction 0.9`", vec!["--memory-fraction", "0.9"]),
        (
            "`--torch 1.12` (no workspace in the allocator)",
            vec!["--torch", "1.12"],
        ),
        (
            "`--torch 2.1` (both workspaces, cuBLASLt's per call)",
            vec!["--torch", "2.1"],
        ),
        ("`--card 24GiB`", vec!["--card", "24GiB"]),
    ];
    let mut out = format!(
        "| at batch {} | fits? | peak reserved | largest batch |\n|---|---|---:|---:|\n",
        grouped(batch.parse()?)
    );
    for (what, extra) in rows {
        let card = if extra.contains(&"--card") {
            vec![]
        } else {
            vec!["--card", "16GiB"]
        };
        let mut args = vec!["--batch", &batch, "--largest-batch"];
        args.extend(card);
        args.extend(extra);
        let v = replay(EXAMPLE, &args)?;
        let fits = if v["fits"] == Value::Bool(true) {
            "fits".to_string()
        } else {
            format!(
                "out of memory at entry {} (`{}`)",
                v["failure"]["entry"],
                v["failure"]["tensor"].as_str().unwrap_or("?")
            )
        };
        out += &format!(
            "| {what} | {fits} | {} | {} |\n",
            format_bytes(num(&v["peak_reserved"])?),
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
                recorded as i64 - tracked as i64,
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

/// `memviz replay` of a lesson fixture on the ideal card.
pub fn replay_lesson(name: &str, args: &[&str]) -> Result<Value> {
    let path = lesson_dir().join(format!("{name}.pickle"));
    let path = path.to_str().context("a path that is not UTF-8")?;
    let mut all = vec!["memviz", "replay", path, "--card", "ideal", "--json"];
    all.extend_from_slice(args);
    Ok(serde_json::from_str(&memviz::run(all)?)?)
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
    let c1 = replay_lesson("c1_sgd", &["--largest-batch"])?;
    let replay_batch = c1["largest_batch"]["batch"].as_u64();
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
            Ok(replay_lesson(&format!("c2_{file}_{layers}"), &[])?["fits"] == Value::Bool(true))
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
