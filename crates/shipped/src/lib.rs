//! The shipped stubs of the exercises, for the proofs that their graders fail them.
//!
//! A learner solves an exercise by editing `exercises/challengeN/src/answer.rs` in place, so
//! that file is not always the stub the book ships. The proofs (the grading crate's
//! `tests/challengeN.rs`, run by the repository's test command) must grade the stub as
//! committed, so the grading crate's build script calls [`write_stub_modules`]: when its
//! `proofs` feature is on, it takes each stub from git's `HEAD` and writes a module
//! declaration for it into `OUT_DIR`, which the proof includes. Without git (a tarball, no
//! `git` on the path) the working file is used, and the build says so.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file a proof includes for the stub called `name`:
/// `include!(concat!(env!("OUT_DIR"), "/shipped_challenge1.rs"));` declares `mod stub`.
pub fn module_file(name: &str) -> String {
    format!("shipped_{name}.rs")
}

/// Where a stub's text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `git show HEAD:./<file>`.
    Head,
    /// The working file: git could not tell (the reason).
    WorkingFile(String),
}

/// The build script's whole job, for stubs given as `(name, file relative to the crate)`.
/// Does nothing unless the `proofs` feature is on, so that a learner's `cargo test` does not
/// depend on git.
pub fn write_stub_modules(stubs: &[(&str, &str)]) {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_PROOFS").is_none() {
        return;
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    for watched in git_files_to_watch(&manifest) {
        println!("cargo:rerun-if-changed={}", watched.display());
    }
    for &(name, file) in stubs {
        println!("cargo:rerun-if-changed={}", manifest.join(file).display());
        match write(&manifest, file, name, &out) {
            Ok(Source::Head) if differs_from_head(&manifest, file) => println!(
                "cargo:warning={file} differs from its last commit: the proofs grade the \
                 committed stub (commit a change to the stub for them to see it)"
            ),
            Ok(Source::Head) => {}
            Ok(Source::WorkingFile(why)) => println!(
                "cargo:warning=the proofs grade {file} as it is in the folder ({why}): \
                 if you edited it, they will not see the shipped stub"
            ),
            Err(e) => panic!("writing the shipped stub {file} for the proofs: {e}"),
        }
    }
}

/// Writes `OUT_DIR/shipped_<name>_answer.rs` (the stub `file`, relative to `dir`) and
/// `OUT_DIR/shipped_<name>.rs` (the module declaration that points at it).
pub fn write(dir: &Path, file: &str, name: &str, out: &Path) -> std::io::Result<Source> {
    let (text, source) = match head_version(dir, file) {
        Ok(text) => (text, Source::Head),
        Err(why) => (
            fs::read_to_string(dir.join(file))?,
            Source::WorkingFile(why),
        ),
    };
    let stub = out.join(format!("shipped_{name}_answer.rs"));
    fs::write(&stub, text)?;
    let path = stub.to_str().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "OUT_DIR is not UTF-8")
    })?;
    fs::write(
        out.join(module_file(name)),
        format!(
            "/// The exercise's stub as shipped (git HEAD), not the working copy.\n\
             #[path = {path:?}]\nmod stub;\n"
        ),
    )?;
    Ok(source)
}

/// Whether the working `file` differs from the committed one.
fn differs_from_head(dir: &Path, file: &str) -> bool {
    let working = fs::read_to_string(dir.join(file)).ok();
    working != head_version(dir, file).ok()
}

/// `file` (relative to `dir`) as the last commit has it.
pub fn head_version(dir: &Path, file: &str) -> Result<String, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg("show")
        .arg(format!("HEAD:./{file}"))
        .output()
        .map_err(|e| format!("git did not run: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git show failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    String::from_utf8(output.stdout).map_err(|_| "the committed file is not UTF-8".into())
}

/// The files whose change moves `HEAD`: the build reruns after a commit or a checkout.
fn git_files_to_watch(dir: &Path) -> Vec<PathBuf> {
    let git_path = |p: &str| -> Option<PathBuf> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["rev-parse", "--path-format=absolute", "--git-path", p])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let mut files: Vec<PathBuf> = ["HEAD", "packed-refs"]
        .into_iter()
        .filter_map(git_path)
        .collect();
    let branch = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    files.extend(branch.as_deref().and_then(git_path));
    files.retain(|f| f.exists());
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    #[test]
    fn an_edited_answer_is_not_taken_for_the_stub() {
        let root = std::env::temp_dir().join(format!("shipped-git-{}", std::process::id()));
        let exercise = root.join("exercises/challenge9");
        let out = root.join("out");
        fs::create_dir_all(exercise.join("src")).unwrap();
        fs::create_dir_all(&out).unwrap();
        fs::write(exercise.join("src/answer.rs"), "pub fn f() { todo!() }\n").unwrap();
        let committed = git(&root, &["init", "-q"])
            && git(&root, &["add", "."])
            && git(
                &root,
                &[
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "commit",
                    "-qm",
                    "stub",
                ],
            );
        if !committed {
            eprintln!("skipped: git is not available");
            return;
        }
        // The learner solves the exercise in place.
        fs::write(exercise.join("src/answer.rs"), "pub fn f() {}\n").unwrap();
        let grading = root.join("crates/grading");
        fs::create_dir_all(&grading).unwrap();
        let file = "../../exercises/challenge9/src/answer.rs";
        assert_eq!(write(&grading, file, "c9", &out).unwrap(), Source::Head);
        let stub = fs::read_to_string(out.join("shipped_c9_answer.rs")).unwrap();
        assert_eq!(stub, "pub fn f() { todo!() }\n");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_module_file_points_at_the_stub() {
        let out = std::env::temp_dir().join(format!("shipped-test-{}", std::process::id()));
        let manifest = out.join("exercise");
        fs::create_dir_all(manifest.join("src")).unwrap();
        fs::write(manifest.join("src/answer.rs"), "pub fn f() {}\n").unwrap();
        // Not a git checkout: the working file, and the reason why.
        let source = write(&manifest, "src/answer.rs", "c9", &out).unwrap();
        assert!(matches!(source, Source::WorkingFile(_)), "{source:?}");
        let module = fs::read_to_string(out.join(module_file("c9"))).unwrap();
        assert!(module.contains("shipped_c9_answer.rs") && module.contains("mod stub;"));
        let stub = fs::read_to_string(out.join("shipped_c9_answer.rs")).unwrap();
        assert_eq!(stub, "pub fn f() {}\n");
        fs::remove_dir_all(&out).unwrap();
    }
}
