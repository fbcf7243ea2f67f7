//! The files of a built book: which pages there are, in a stable order.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// Every file under `root`, as paths relative to it with `/` separators, sorted, so reports
/// and screenshots come out in the same order on every machine.
pub fn files(root: &Path) -> Result<Vec<String>> {
    if !root.is_dir() {
        bail!(
            "{} is not a directory: build the book first (`mdbook build`) and pass its output folder",
            root.display()
        );
    }
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            let rel = rel.join(entry.file_name());
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(rel);
            } else if let Some(s) = rel.to_str() {
                out.push(s.replace(std::path::MAIN_SEPARATOR, "/"));
            } else {
                bail!("{} has a name that is not UTF-8", root.join(&rel).display());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The HTML pages of the book (relative paths), sorted.
pub fn pages(root: &Path) -> Result<Vec<String>> {
    let pages: Vec<String> = files(root)?
        .into_iter()
        .filter(|f| f.ends_with(".html") || f.ends_with(".htm"))
        .collect();
    if pages.is_empty() {
        bail!(
            "no HTML pages under {}: is it the output of `mdbook build`?",
            root.display()
        );
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_a_clear_error() {
        let err = pages(Path::new("/no/such/book")).unwrap_err().to_string();
        assert!(err.contains("mdbook build"), "{err}");
    }
}
