use super::*;
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/links")
}

fn broken() -> Vec<(String, String)> {
    check(&fixture())
        .unwrap()
        .into_iter()
        .map(|b| (b.page, b.link))
        .collect()
}

fn pair(page: &str, link: &str) -> (String, String) {
    (page.to_string(), link.to_string())
}

#[test]
fn a_link_to_a_missing_page_is_caught() {
    assert!(broken().contains(&pair("index.html", "missing.html")));
}

#[test]
fn an_anchor_missing_from_its_target_is_caught() {
    let b = broken();
    assert!(b.contains(&pair("index.html", "page.html#nowhere")));
    assert!(b.contains(&pair("page.html", "#gone")));
}

#[test]
fn a_missing_image_is_caught() {
    assert!(broken().contains(&pair("index.html", "img/missing.png")));
}

#[test]
fn a_link_out_of_the_book_is_caught() {
    assert!(broken().contains(&pair("index.html", "../outside.html")));
}

#[test]
fn nothing_else_is_reported() {
    // Folders, queries, percent-encoded ids, `<a name>`, `#top`, `<base href>` and
    // external links all resolve or are skipped.
    assert_eq!(
        broken(),
        vec![
            pair("index.html", "missing.html"),
            pair("index.html", "page.html#nowhere"),
            pair("index.html", "../outside.html"),
            pair("index.html", "img/missing.png"),
            pair("page.html", "#gone"),
        ]
    );
}

#[test]
fn reasons_name_the_missing_thing() {
    let all = check(&fixture()).unwrap();
    let reason = |link: &str| {
        all.iter()
            .find(|b| b.link == link)
            .map(|b| b.reason.clone())
            .unwrap()
    };
    assert_eq!(reason("missing.html"), "no such file: missing.html");
    assert_eq!(
        reason("page.html#nowhere"),
        "no element with id `nowhere` in page.html"
    );
    assert_eq!(reason("../outside.html"), "points outside the book");
}

#[test]
fn schemes_are_external_and_paths_are_not() {
    for link in [
        "https://x.org",
        "mailto:a@b",
        "data:image/png;base64,AA",
        "//cdn/x.js",
    ] {
        assert!(is_external(link), "{link}");
    }
    for link in [
        "page.html",
        "a/b:c.html",
        "#x",
        "../x",
        "/abs.html",
        "1http:x",
    ] {
        assert!(!is_external(link), "{link}");
    }
}

#[test]
fn paths_resolve_against_their_folder() {
    let dir = vec!["a".to_string(), "b".to_string()];
    assert_eq!(resolve(&dir, "../c.html").unwrap(), ["a", "c.html"]);
    assert_eq!(resolve(&dir, "./d/").unwrap(), ["a", "b", "d", ""]);
    assert_eq!(resolve(&dir, "/top.html").unwrap(), ["top.html"]);
    assert_eq!(resolve(&dir, "x%20y.html").unwrap(), ["a", "b", "x y.html"]);
    assert!(resolve(&dir, "../../../x").is_err());
}
