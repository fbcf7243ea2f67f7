//! The book's PyTorch files (`pytorch/*.py`, `pytorch/snippets/*.py`) each have a recorded run
//! in `pytorch/runs/`, made by `reference/pytorch/run_snippets.py` with a real PyTorch: the
//! record names the torch version and the SHA-256 of the file and the shared helpers it ran
//! with. This test needs no PyTorch: it recomputes the hashes and fails when a file changed
//! after its run (or has none), when a run failed, or when a record's file is gone.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};

/// Imported by the others and never run; hashed after each file, in this order (as the
/// runner does).
const HELPERS: [&str; 2] = ["pytorch/lesson.py", "pytorch/snippets/measure.py"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files that are run: every `.py` in `pytorch/` and `pytorch/snippets/` but the helpers.
fn run_files() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["pytorch", "pytorch/snippets"] {
        for entry in fs::read_dir(root().join(dir)).expect("the folder exists") {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let rel = format!("{dir}/{name}");
            if name.ends_with(".py") && !HELPERS.contains(&rel.as_str()) {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

fn digest(rel: &str) -> String {
    let mut h = Sha256::new();
    for file in std::iter::once(rel).chain(HELPERS) {
        h.update(fs::read(root().join(file)).expect("readable"));
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn record_name(rel: &str) -> String {
    let inside = rel.strip_prefix("pytorch/").unwrap().replace('/', "__");
    format!("{}.txt", inside.strip_suffix(".py").unwrap())
}

#[test]
fn there_are_files_to_check() {
    let files = run_files();
    assert!(files.len() >= 10, "{files:?}");
    assert!(files.contains(&"pytorch/challenge1.py".to_string()));
}

#[test]
fn every_file_has_a_fresh_successful_run() {
    let mut problems = Vec::new();
    for rel in run_files() {
        let record = root().join("pytorch/runs").join(record_name(&rel));
        let Ok(text) = fs::read_to_string(&record) else {
            problems.push(format!("{rel}: no recorded run"));
            continue;
        };
        let lines: Vec<&str> = text.lines().take(3).collect();
        if lines.first() != Some(&format!("# {rel}").as_str()) {
            problems.push(format!("{rel}: the record names another file"));
        }
        if lines.get(1) != Some(&format!("# sha256 {}", digest(&rel)).as_str()) {
            problems.push(format!("{rel}: changed since its recorded run"));
        }
        let env = lines.get(2).copied().unwrap_or_default();
        if !env.starts_with("# torch ") || !env.ends_with(", exit 0") {
            problems.push(format!(
                "{rel}: the recorded run failed or names no torch: {env}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nrerun: /work/venv-torch/bin/python reference/pytorch/run_snippets.py (a Python \
         with torch; see reference/pytorch/README.md)",
        problems.join("\n")
    );
}

#[test]
fn every_record_has_its_file() {
    let wanted: Vec<String> = run_files().iter().map(|r| record_name(r)).collect();
    for entry in fs::read_dir(root().join("pytorch/runs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(wanted.contains(&name), "pytorch/runs/{name} has no file");
    }
}

/// The Python files' lesson constants are the engine's: the card of the lesson's message and
/// its training set (a typed copy in Python would drift unseen).
#[test]
fn the_python_lesson_constants_are_the_engines() {
    // The book's digit groups, with Python's `_` between them.
    let grouped = |n: u64| charts::style::grouped(n).replace('\u{202f}', "_");
    let lesson = fs::read_to_string(root().join("pytorch/lesson.py")).unwrap();
    let card = gpumem::lesson::CARD_BYTES;
    let rows = gpumem::data::LESSON_TRAINING_EVENTS;
    assert!(
        lesson.contains(&format!("LESSON_CARD = {}", grouped(card))),
        "{card}"
    );
    assert!(
        lesson.contains(&format!("TRAINING_SET = {}", grouped(rows))),
        "{rows}"
    );
    let fraction = fs::read_to_string(root().join("pytorch/snippets/memory_fraction.py")).unwrap();
    assert!(
        fraction.contains(&format!("{} * 2**20", grouped(card >> 20)))
            && card.is_multiple_of(1 << 20),
        "memory_fraction.py's card is not the engine's {card} B"
    );
}

/// Every snippet's every anchor is on a page of the book exactly once (one copy of the code,
/// and none left out), and every include of a snippet names an anchor the file has.
#[test]
fn every_snippet_is_on_one_page() {
    let src = root().join("src");
    let mut includes: Vec<(String, String)> = Vec::new(); // (page, "file.py:anchor")
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        let page = path.file_name().unwrap().to_string_lossy().into_owned();
        for (at, _) in text.match_indices("{{#include ../pytorch/snippets/") {
            let rest = &text[at + "{{#include ../pytorch/snippets/".len()..];
            let end = rest.find("}}").expect("the include is closed");
            includes.push((page.clone(), rest[..end].to_string()));
        }
    }
    let mut wanted = Vec::new();
    for rel in run_files() {
        let Some(name) = rel.strip_prefix("pytorch/snippets/") else {
            continue;
        };
        let text = fs::read_to_string(root().join(&rel)).unwrap();
        for line in text.lines() {
            if let Some(anchor) = line.trim().strip_prefix("# ANCHOR: ") {
                wanted.push(format!("{name}:{}", anchor.trim()));
            }
        }
    }
    assert!(wanted.len() >= 14, "{wanted:?}");
    for w in &wanted {
        let on: Vec<&str> = includes
            .iter()
            .filter(|(_, i)| i == w)
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(on.len(), 1, "{w} is included on {on:?}");
    }
    for (page, i) in &includes {
        assert!(
            wanted.contains(i),
            "{page} includes {i}, which no snippet anchors"
        );
    }
}

/// mdBook includes an anchored region as it is, indentation and all: every region must start
/// at the left margin, so that what a learner copies from the page runs as it stands (code
/// under an `if` would paste as an IndentationError).
#[test]
fn every_snippet_region_pastes_at_the_left_margin() {
    for rel in run_files() {
        if !rel.starts_with("pytorch/snippets/") {
            continue;
        }
        let text = fs::read_to_string(root().join(&rel)).unwrap();
        let mut region: Option<(&str, Vec<usize>)> = None;
        for line in text.lines() {
            let t = line.trim_start();
            if let Some(name) = t.strip_prefix("# ANCHOR: ") {
                region = Some((name, Vec::new()));
            } else if t.starts_with("# ANCHOR_END: ") {
                let (name, indents) = region.take().expect("an ANCHOR before its END");
                assert_eq!(
                    indents.iter().min(),
                    Some(&0),
                    "{rel}:{name} starts indented (or is empty)"
                );
            } else if let Some((_, indents)) = region.as_mut()
                && !t.is_empty()
            {
                indents.push(line.len() - t.len());
            }
        }
    }
}
