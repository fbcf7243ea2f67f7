//! What the memviz test files share: temporary files that clean up after themselves.

use std::path::{Path, PathBuf};

/// A file in its own temporary folder, removed when the value is dropped (the test's end).
#[derive(Debug)]
pub struct TempFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// `name` in a fresh folder under the system's temporary folder.
pub fn temp(name: &str) -> TempFile {
    let dir = tempfile::Builder::new()
        .prefix("memviz-test-")
        .tempdir()
        .expect("temp folder");
    TempFile {
        path: dir.path().join(name),
        _dir: dir,
    }
}
