//! The committed figures and numbers are what the engine produces today, byte for byte.

use figures::book::book_src;
use figures::files::{render_all, stale};
use std::sync::OnceLock;

/// Rendered once for all the tests of this file (the tests run in parallel threads).
fn rendered() -> &'static [(&'static str, String)] {
    static RENDERED: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    RENDERED.get_or_init(|| render_all().expect("every artifact renders"))
}

#[test]
fn committed_figures_and_numbers_are_current() {
    let stale = stale(&book_src(), rendered()).expect("the book's src/ is readable");
    assert!(
        stale.is_empty(),
        "generated files are stale:\n  {}\nrun `cargo run -p figures` and commit src/figures and src/generated",
        stale.join("\n  ")
    );
}

#[test]
fn rendering_twice_gives_the_same_bytes() {
    let again = render_all().unwrap();
    for ((path, x), (_, y)) in rendered().iter().zip(&again) {
        assert!(x == y, "{path} differs between two renderings");
    }
}

#[test]
fn charts_are_readable_svg_with_a_background_and_a_title() {
    for (path, svg) in rendered() {
        if !path.ends_with(".svg") {
            continue;
        }
        assert!(svg.starts_with("<svg role=\"img\" width="), "{path}");
        assert!(svg.contains("<title>"), "{path}: no <title>");
        assert!(
            svg.contains("fill=\"#FFFFFF\""),
            "{path}: no background of its own (dark themes)"
        );
        for size in svg.split("font-size=\"").skip(1) {
            let px: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(px >= 15.5, "{path}: text of {px} px is too small to read");
        }
    }
}

#[test]
fn one_value_snippets_fit_inside_a_sentence() {
    for (path, text) in rendered() {
        let inline = figures::ARTIFACTS
            .iter()
            .find(|a| a.path == *path)
            .is_some_and(|a| a.about.starts_with("inline:"));
        if inline {
            assert!(
                !text.contains('\n') && !text.is_empty(),
                "{path}: an inline snippet must be one line with no newline: {text:?}"
            );
        } else if path.ends_with(".md") {
            assert!(
                text.ends_with('\n'),
                "{path}: a block snippet ends with a newline"
            );
        }
    }
}
