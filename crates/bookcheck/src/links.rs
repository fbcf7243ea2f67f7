//! Every relative link, `#anchor` and embedded resource in the built HTML must resolve.
//!
//! Checked on disk, from the parsed HTML (not the Markdown): that is what readers click, after
//! mdBook has rewritten `.md` links and numbered headings. External links (`https:`,
//! `mailto:` and any other scheme) are skipped: there is no network here, and their targets
//! change without us.

use anyhow::{Context, Result};
use percent_encoding::percent_decode_str;
use scraper::{Html, Selector};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

/// Elements and the attribute that names what they link to or load.
const LINKING: [(&str, &str); 8] = [
    ("a[href]", "href"),
    ("area[href]", "href"),
    ("link[href]", "href"),
    ("img[src]", "src"),
    ("script[src]", "src"),
    ("iframe[src]", "src"),
    ("source[src]", "src"),
    ("embed[src]", "src"),
];

/// One link that does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The page it is on, relative to the book's root.
    pub page: String,
    /// The link as written in the HTML.
    pub link: String,
    /// Why it does not resolve.
    pub reason: String,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: `{}`: {}", self.page, self.link, self.reason)
    }
}

/// Checks every page under `root` (an mdBook output folder); returns the broken links, in
/// page order. An error means the book could not be read at all.
pub fn check(root: &Path) -> Result<Vec<Broken>> {
    let mut ids = IdCache::default();
    let mut broken = Vec::new();
    for page in crate::site::pages(root)? {
        let html = read(root, &page)?;
        let doc = Html::parse_document(&html);
        let base = base_dir(&doc, &page);
        for (selector, attr) in LINKING {
            let selector = Selector::parse(selector).expect("the selectors above are valid CSS");
            for element in doc.select(&selector) {
                let Some(link) = element.value().attr(attr) else {
                    continue;
                };
                if let Err(reason) = check_link(root, &page, &base, link, &mut ids) {
                    broken.push(Broken {
                        page: page.clone(),
                        link: link.to_string(),
                        reason,
                    });
                }
            }
        }
    }
    Ok(broken)
}

fn read(root: &Path, page: &str) -> Result<String> {
    let path = root.join(page);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// Where relative links on `page` start from: the page's folder, or its `<base href>`.
/// `None` when the base is another site, so relative links are external too.
fn base_dir(doc: &Html, page: &str) -> Option<Vec<String>> {
    let mut dir: Vec<String> = page.split('/').map(str::to_string).collect();
    dir.pop();
    let selector = Selector::parse("base[href]").expect("valid CSS");
    let Some(base) = doc
        .select(&selector)
        .next()
        .and_then(|b| b.value().attr("href"))
    else {
        return Some(dir);
    };
    if is_external(base) {
        return None;
    }
    // The base names a folder when it ends in `/`; otherwise its last part is a file.
    let folder = match base.rfind('/') {
        Some(i) => &base[..=i],
        None => "",
    };
    let mut resolved = resolve(&dir, folder).ok()?;
    if resolved.last().is_some_and(String::is_empty) {
        resolved.pop();
    }
    Some(resolved)
}

/// Whether `link` leaves the book: it has a scheme (`https:`, `mailto:`, `data:` …) or is
/// protocol-relative (`//host/…`).
fn is_external(link: &str) -> bool {
    if link.starts_with("//") {
        return true;
    }
    let Some(colon) = link.find(':') else {
        return false;
    };
    let scheme = &link[..colon];
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The path segments `path` names, starting from the folder `dir` (or the root for `/…`),
/// percent-decoded. An empty last segment means "the folder itself".
fn resolve(dir: &[String], path: &str) -> Result<Vec<String>, String> {
    let (mut out, rest) = match path.strip_prefix('/') {
        Some(rest) => (Vec::new(), rest),
        None => (dir.to_vec(), path),
    };
    let parts: Vec<&str> = rest.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match *part {
            "." | "" if !last => {}
            "." | "" => out.push(String::new()),
            ".." => {
                if out.pop().is_none() {
                    return Err("points outside the book".into());
                }
                if last {
                    out.push(String::new());
                }
            }
            part => out.push(decode(part)?),
        }
    }
    Ok(out)
}

fn decode(s: &str) -> Result<String, String> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| format!("`{s}` is not valid percent-encoded UTF-8"))
}

/// Resolves one link found on `page`; `Err` says why it is broken.
fn check_link(
    root: &Path,
    page: &str,
    base: &Option<Vec<String>>,
    link: &str,
    ids: &mut IdCache,
) -> Result<(), String> {
    let link = link.trim();
    if is_external(link) {
        return Ok(());
    }
    let Some(base) = base else {
        return Ok(()); // relative to another site's <base>
    };
    let (rest, fragment) = link.split_once('#').unwrap_or((link, ""));
    let path = rest.split_once('?').map_or(rest, |(p, _)| p);
    let target = if path.is_empty() {
        page.to_string()
    } else {
        let mut segments = resolve(base, path)?;
        if segments.last().is_some_and(String::is_empty) {
            segments.pop();
        }
        let mut target = segments.join("/");
        if target.is_empty() || root.join(&target).is_dir() {
            target = if target.is_empty() {
                "index.html".into()
            } else {
                format!("{target}/index.html")
            };
        }
        if !root.join(&target).is_file() {
            return Err(format!("no such file: {target}"));
        }
        target
    };
    let fragment = decode(fragment)?;
    let is_html = target.ends_with(".html") || target.ends_with(".htm");
    if fragment.is_empty() || fragment.eq_ignore_ascii_case("top") || !is_html {
        return Ok(());
    }
    if ids.get(root, &target)?.contains(&fragment) {
        Ok(())
    } else {
        Err(format!("no element with id `{fragment}` in {target}"))
    }
}

/// The `id`s (and `<a name>`s) of each page, parsed once however many links point there.
#[derive(Default)]
struct IdCache(HashMap<String, HashSet<String>>);

impl IdCache {
    fn get(&mut self, root: &Path, page: &str) -> Result<&HashSet<String>, String> {
        if !self.0.contains_key(page) {
            let html = read(root, page).map_err(|e| format!("{e:#}"))?;
            let doc = Html::parse_document(&html);
            let selector = Selector::parse("[id], a[name]").expect("valid CSS");
            let ids = doc
                .select(&selector)
                .flat_map(|e| [e.value().id(), e.value().attr("name")])
                .flatten()
                .map(str::to_string)
                .collect();
            self.0.insert(page.to_string(), ids);
        }
        Ok(&self.0[page])
    }
}

#[cfg(test)]
mod tests;
