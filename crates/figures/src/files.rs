//! Writing the artifacts into the book, and checking that the committed ones are current.

use crate::artifacts::ARTIFACTS;
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::Path;

/// The folders this crate owns inside the book's `src/`: every file in them is generated, so
/// a file there that no artifact produces is stale too.
pub const OWNED_DIRS: [&str; 3] = ["figures", "generated", crate::quizzes::DIR];

/// Renders every artifact, in registry order: `(path, contents)`.
pub fn render_all() -> Result<Vec<(&'static str, String)>> {
    ARTIFACTS
        .iter()
        .map(|a| {
            let text = (a.render)().with_context(|| format!("rendering {}", a.path))?;
            Ok((a.path, text))
        })
        .collect()
}

/// What differs between `rendered` and the files under `src`: changed or missing
/// artifacts, and files in the owned folders that no artifact produces.
pub fn stale(src: &Path, rendered: &[(&str, String)]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (path, text) in rendered {
        match std::fs::read(src.join(path)) {
            Ok(on_disk) if on_disk == text.as_bytes() => {}
            Ok(_) => out.push(format!("{path} (out of date)")),
            Err(_) => out.push(format!("{path} (missing)")),
        }
    }
    for orphan in orphans(src, rendered)? {
        out.push(format!("{orphan} (no artifact makes it)"));
    }
    Ok(out)
}

/// Files in the owned folders that no artifact produces, as paths relative to `src`.
pub fn orphans(src: &Path, rendered: &[(&str, String)]) -> Result<Vec<String>> {
    let known: BTreeSet<&str> = rendered.iter().map(|(p, _)| *p).collect();
    let mut out = Vec::new();
    for dir in OWNED_DIRS {
        let Ok(entries) = std::fs::read_dir(src.join(dir)) else {
            continue;
        };
        for entry in entries {
            let name = entry?.file_name();
            let path = format!("{dir}/{}", name.to_string_lossy());
            // An owned folder inside another (the quizzes) is checked on its own.
            if !known.contains(path.as_str()) && !OWNED_DIRS.contains(&path.as_str()) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What [`write_all`] did: `(path, changed)` for each artifact, and the orphans removed.
#[derive(Debug)]
pub struct Written {
    pub artifacts: Vec<(&'static str, bool)>,
    pub removed: Vec<String>,
}

/// Writes every rendered artifact under `src` (only those whose bytes changed) and removes
/// orphans.
pub fn write_all(src: &Path, rendered: &[(&'static str, String)]) -> Result<Written> {
    let mut written = Vec::new();
    for (path, text) in rendered {
        let file = src.join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let changed = std::fs::read(&file).map_or(true, |old| old != text.as_bytes());
        if changed {
            std::fs::write(&file, text)
                .with_context(|| format!("cannot write {}", file.display()))?;
        }
        written.push((*path, changed));
    }
    let removed = orphans(src, rendered)?;
    for orphan in &removed {
        let file = src.join(orphan);
        std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
    }
    Ok(Written {
        artifacts: written,
        removed,
    })
}
