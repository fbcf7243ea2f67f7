//! The book's PyTorch files (`pytorch/*.py`, `pytorch/snippets/*.py`) each have a recorded run
//! in `pytorch/runs/`, made by `reference/pytorch/run_snippets.py` with a real PyTorch: the
//! record names the torch version and the SHA-256 of the file and the shared helpers it ran
//! with. This test needs no PyTorch: it recomputes the hashes and fails when a file changed
//! after its run (or has none), when a run failed, or when a record's file is gone.
//!
//! A run on a CUDA card (`pytorch/runs-cuda/NAME.txt`, made by `scripts/gpu-evidence`) cannot
//! be remade without a GPU, so it is never required nor failed for being stale: the page
//! fragment beside it (`pytorch/runs-cuda/NAME.md`, written by the runner) shows it, and says
//! so when the file has changed since. The tests check that each fragment says what the
//! records and the files' hashes say today.

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

/// What a page shows of `rel`'s CUDA record (`cuda_dir/NAME.txt`), beside its CPU record: the
/// same text as `page_fragment` in reference/pytorch/run_snippets.py.
fn cuda_fragment(rel: &str, cuda_dir: &Path, current_digest: &str) -> String {
    let record = cuda_dir.join(record_name(rel));
    let Ok(text) = fs::read_to_string(&record) else {
        return format!(
            "<!-- No run of {rel} on a CUDA card is recorded yet: scripts/gpu-evidence makes \
             one (pytorch/README.md). -->\n"
        );
    };
    let lines: Vec<&str> = text.lines().collect();
    let recorded = lines[1].trim_start_matches("# sha256 ").trim();
    let header = lines[2].trim_start_matches("# ");
    let machine = header.rsplit_once(", exit ").map_or(header, |(m, _)| m);
    let mut out = format!("On a CUDA card ({machine}):\n\n");
    if recorded != current_digest {
        out += &format!(
            "> [!NOTE]\n> This run on a CUDA card is from an earlier version of `{rel}`: the \
             file has changed since. `scripts/gpu-evidence` on a GPU machine records it \
             again.\n\n"
        );
    }
    out += "```text\n";
    for line in lines.iter().skip(4) {
        out += line;
        out += "\n";
    }
    out + "```\n"
}

fn fragment_name(rel: &str) -> String {
    record_name(rel).replace(".txt", ".md")
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

/// Each file's CUDA fragment is what its CUDA record (if any) and its hash today say; a stale
/// CUDA record is shown with its note, never failed.
#[test]
fn every_cuda_fragment_is_current() {
    let dir = root().join("pytorch/runs-cuda");
    let mut problems = Vec::new();
    for rel in run_files() {
        let wanted = cuda_fragment(&rel, &dir, &digest(&rel));
        match fs::read_to_string(dir.join(fragment_name(&rel))) {
            Ok(text) if text == wanted => {}
            Ok(_) => problems.push(format!("{rel}: its CUDA fragment is out of date")),
            Err(_) => problems.push(format!("{rel}: no CUDA fragment")),
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nrewrite them (no torch needed): python3 reference/pytorch/run_snippets.py --pages",
        problems.join("\n")
    );
}

#[test]
fn every_cuda_record_and_fragment_has_its_file() {
    let files = run_files();
    let mut wanted: Vec<String> = files.iter().map(|r| record_name(r)).collect();
    wanted.extend(files.iter().map(|r| fragment_name(r)));
    for entry in fs::read_dir(root().join("pytorch/runs-cuda")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            wanted.contains(&name),
            "pytorch/runs-cuda/{name} has no file"
        );
    }
}

/// The mechanism on a temporary record: shown as it is while the file is unchanged, marked as
/// from an earlier version once it has changed, and a note in a comment when there is none.
#[test]
fn a_cuda_record_is_shown_and_marked_when_its_file_changed() {
    let dir = std::env::temp_dir().join(format!("pytorch_runs_cuda_{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let rel = "pytorch/snippets/evaluation.py";
    let none = cuda_fragment(rel, &dir, "abc");
    assert!(
        none.starts_with("<!-- No run of pytorch/snippets/evaluation.py"),
        "{none}"
    );
    fs::write(
        dir.join(record_name(rel)),
        "# pytorch/snippets/evaluation.py\n# sha256 abc\n\
         # torch 2.11.0+cu130, CUDA 13.0, Python 3.12.3, NVIDIA H100 80GB HBM3, exit 0\n\
         # run by reference/pytorch/run_snippets.py --cuda; normalised: paths shortened\n\
         no_grad         forward peak  170.84 MiB\n",
    )
    .unwrap();
    let fresh = cuda_fragment(rel, &dir, "abc");
    let stale = cuda_fragment(rel, &dir, "def");
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        fresh,
        "On a CUDA card (torch 2.11.0+cu130, CUDA 13.0, Python 3.12.3, NVIDIA H100 80GB HBM3):\n\n\
         ```text\nno_grad         forward peak  170.84 MiB\n```\n"
    );
    assert!(!fresh.contains("earlier version"));
    assert!(
        stale.contains("from an earlier version of `pytorch/snippets/evaluation.py`"),
        "{stale}"
    );
    assert!(stale.ends_with("```text\nno_grad         forward peak  170.84 MiB\n```\n"));
}

/// Every page that shows a file's CPU record shows its CUDA fragment too.
#[test]
fn pages_show_the_cuda_fragment_beside_each_cpu_record() {
    for entry in fs::read_dir(root().join("src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("{{#include ../pytorch/runs/") {
            let rest = &text[at + "{{#include ../pytorch/runs/".len()..];
            let name = rest.split(".txt").next().unwrap();
            let fragment = format!("{{{{#include ../pytorch/runs-cuda/{name}.md}}}}");
            assert!(
                text.contains(&fragment),
                "{} shows pytorch/runs/{name}.txt without {fragment}",
                path.display()
            );
        }
    }
}
