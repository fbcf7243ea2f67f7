//! README.md's layout table matches the tree: every crate and exercise folder has its row,
//! every path a row names exists, and the engine's row names exactly the engine's modules.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The layout table's rows: (first cell, second cell).
fn rows() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let table = readme
        .split("## Layout")
        .nth(1)
        .expect("a Layout section")
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').splitn(2, " | ").collect();
            (cells[0].trim().to_string(), cells[1].trim().to_string())
        })
        .collect::<Vec<_>>();
    assert!(table.len() > 5, "the layout table has rows");
    table
}

/// The `code spans` of a cell.
fn spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

fn dirs(under: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(under))
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let p = e.path();
            p.join("Cargo.toml")
                .exists()
                .then(|| format!("{under}/{}", e.file_name().to_string_lossy()))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_crate_has_a_row_and_every_row_exists() {
    let rows = rows();
    let firsts: Vec<&str> = rows.iter().flat_map(|(p, _)| spans(p)).collect();
    for krate in dirs("crates") {
        assert!(firsts.contains(&krate.as_str()), "no row for {krate}");
    }
    assert!(
        !dirs("exercises").is_empty() && firsts.contains(&"exercises/challengeN"),
        "no row for the exercises"
    );
    for path in &firsts {
        let path = path.replace("challengeN", "challenge1");
        assert!(root().join(&path).exists(), "the table names {path}");
    }
}

#[test]
fn the_exercise_row_names_what_every_exercise_holds() {
    let rows = rows();
    let (_, what) = rows
        .iter()
        .find(|(p, _)| p.contains("exercises/challengeN"))
        .expect("the exercises' row");
    for challenge in dirs("exercises") {
        for path in spans(what).into_iter().filter(|s| s.contains('/')) {
            let file = root().join(&challenge).join(path);
            assert!(file.exists(), "{challenge} lacks {path}");
        }
    }
}

#[test]
fn the_engine_row_names_its_modules() {
    let rows = rows();
    let (_, what) = rows
        .iter()
        .find(|(p, _)| p == "`crates/gpumem`")
        .expect("the engine's row");
    let named: BTreeSet<&str> = spans(what).into_iter().collect();
    let lib = std::fs::read_to_string(root().join("crates/gpumem/src/lib.rs")).unwrap();
    let modules: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
                .or_else(|| l.strip_prefix("pub(crate) mod "))?;
            rest.strip_suffix(';')
        })
        .collect();
    assert!(modules.len() > 10, "{modules:?}");
    for m in &modules {
        assert!(named.contains(m), "the engine's row does not name `{m}`");
    }
    for n in named
        .iter()
        .filter(|n| n.chars().all(|c| c.is_ascii_lowercase()))
    {
        assert!(
            modules.contains(n),
            "the engine's row names `{n}`, not a module"
        );
    }
}

/// The Rust version the README and the book's Setup page ask for is the workspace's
/// `rust-version`.
#[test]
fn the_stated_rust_version_is_the_workspaces() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("the workspace states a rust-version")
        .trim_matches('"');
    let wanted = format!("{version} or newer");
    for page in ["README.md", "src/setup.md"] {
        let text = std::fs::read_to_string(root().join(page)).unwrap();
        assert!(text.contains(&wanted), "{page} does not say `{wanted}`");
    }
}
