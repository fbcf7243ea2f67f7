//! Where the book is: the bottom of the crate, used by every generator that reads its pages
//! and by the writer of the artifacts.

use std::path::{Path, PathBuf};

/// The book's `src/` folder in this repository.
pub fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src")
}
