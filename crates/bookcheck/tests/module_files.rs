//! One module-file style in every crate and exercise: a module with submodules is `foo.rs`
//! beside a `foo/` folder, never `foo/mod.rs` (Rust 2018's form; a tree that mixes both makes
//! a reader look in two places).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_lives_in_a_mod_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for group in ["crates", "exercises"] {
        for krate in std::fs::read_dir(root.join(group)).expect(group).flatten() {
            rust_files(&krate.path().join("src"), &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "found the sources ({} files)",
        files.len()
    );
    let old: Vec<_> = files
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "mod.rs"))
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    assert!(
        old.is_empty(),
        "move these to NAME.rs beside NAME/: {old:?}"
    );
}
