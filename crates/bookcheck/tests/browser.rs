//! The browser check against a fixture site with one problem of each kind. Needs Chromium;
//! without it (a fresh machine before CI installs it) the test says so and passes.

use bookcheck::browser::{DEFAULT_CHROMIUM, Options, check};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/browser")
}

#[test]
fn every_kind_of_page_problem_is_caught_and_screenshots_are_taken() {
    if !Path::new(DEFAULT_CHROMIUM).is_file() {
        eprintln!("skipped: no Chromium at {DEFAULT_CHROMIUM} (apt-get install -y chromium)");
        return;
    }
    let shots = tempfile::tempdir().unwrap();
    let options = Options {
        screenshots: Some(shots.path().to_path_buf()),
        theme: Some("coal".into()),
        ..Options::default()
    };
    let report = check(&fixture(), &options).unwrap();
    assert_eq!(report.pages.len(), 5);
    let on = |page: &str| -> Vec<String> {
        report
            .problems
            .iter()
            .filter(|p| p.page == page)
            .map(|p| p.what.clone())
            .collect()
    };
    assert!(on("index.html").is_empty(), "{:?}", on("index.html"));
    assert!(
        on("challenge-1.html").is_empty(),
        "{:?}",
        on("challenge-1.html")
    );
    let thrown = on("thrown.html");
    assert!(
        thrown
            .iter()
            .any(|p| p.starts_with("uncaught exception") && p.contains("undefinedFunction")),
        "{thrown:?}"
    );
    let console = on("console.html");
    assert_eq!(console, ["console error: widget failed to start"]);
    let images = on("broken-image.html");
    for src in ["figures/missing.svg", "not-an-image.svg"] {
        assert!(
            images.contains(&format!("image did not load: {src}")),
            "{images:?}"
        );
    }
    let mut names: Vec<String> = report
        .screenshots
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["challenge-1.png", "index.png"]);
    for shot in &report.screenshots {
        let png = std::fs::read(shot).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{}", shot.display());
    }
}

/// axe-core flags our pale text and lists mdBook's apart. Needs Chromium and axe-core
/// (`npm install --prefix target/axe axe-core`, as .ci/run does); without them it says so and
/// passes, except where `BOOKCHECK_REQUIRE_AXE=1` (CI) makes them required.
#[test]
fn axe_flags_our_contrast_and_lists_mdbooks_apart() {
    let axe = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(bookcheck::axe::DEFAULT_AXE);
    let required = std::env::var("BOOKCHECK_REQUIRE_AXE").is_ok_and(|v| v == "1");
    if !Path::new(DEFAULT_CHROMIUM).is_file() || !axe.is_file() {
        assert!(!required, "axe-core or Chromium missing: {}", axe.display());
        eprintln!("skipped: needs Chromium and {}", axe.display());
        return;
    }
    let options = Options {
        axe: Some(axe),
        ..Options::default()
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/axe");
    let report = check(&dir, &options).unwrap();
    let ours: Vec<&str> = report.problems.iter().map(|p| p.what.as_str()).collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    assert!(ours[0].contains("color-contrast") && ours[0].contains("callout-title"));
    assert!(
        report
            .upstream
            .iter()
            .any(|u| u.what.starts_with("color-contrast")),
        "{:?}",
        report.upstream
    );
}
