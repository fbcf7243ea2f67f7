//! Accessibility: axe-core (the standard WCAG checker) run inside each page, in the tab the
//! browser check already has open. A violation of WCAG 2.x A or AA on the book's own content
//! is a problem of that page — in every theme, colour contrast included: where mdBook's own
//! theme colours fall short (its dark themes' links, table headers, highlighted code),
//! `theme/contrast.css` overrides them. What mdBook itself draws around the content (its menu
//! bar, sidebar and their controls) is upstream's, listed by [`UPSTREAM`] and left out.

use anyhow::{Context, Result, anyhow};
use headless_chrome::Tab;
use std::path::Path;

/// Where `.ci/run` puts axe-core (`npm install --prefix target/axe axe-core@VERSION`).
pub const DEFAULT_AXE: &str = "target/axe/node_modules/axe-core/axe.min.js";

/// mdBook's own elements: findings whose every node matches one of these selectors are
/// upstream's (mdBook 0.5's menu bar, sidebar, search and theme controls), not ours.
pub const UPSTREAM: &[&str] = &[
    "#mdbook-menu-bar",
    "#mdbook-sidebar",
    "#mdbook-sidebar-toggle",
    "#mdbook-search-wrapper",
    "#mdbook-theme-list",
    "#mdbook-help-container",
    ".nav-wrapper",
    ".nav-wide-wrapper",
    ".mobile-nav-chapters",
    ".nav-chapters",
    ".blockquote-tag-title",
];

/// Pages mdBook makes by itself (the sidebar's table-of-contents frame), whose findings are
/// all upstream's.
pub const UPSTREAM_PAGES: &[&str] = &["toc.html"];

/// One rule broken on a page, with the elements that break it (CSS selectors).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Finding {
    pub id: String,
    pub help: String,
    pub nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Node {
    /// The element's selector, as axe gives it.
    pub target: String,
    /// Whether it lies inside one of mdBook's own elements ([`UPSTREAM`]).
    pub upstream: bool,
    /// axe's one-line account of the failure (contrast ratios and colours, for example).
    pub summary: String,
}

/// Reads axe-core's script, or says how to get it.
pub fn load(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read axe-core at {}: install it with `npm install --no-save --prefix \
             target/axe axe-core` (as .ci/run does), or name it with --axe PATH",
            path.display()
        )
    })
}

/// Runs axe on the page open in `tab`: the violations of WCAG 2.x A and AA, each node marked
/// as ours or mdBook's.
pub fn audit(tab: &Tab, script: &str) -> Result<Vec<Finding>> {
    tab.evaluate(script, false)
        .map_err(|e| anyhow!("cannot load axe-core into the page: {e}"))?;
    let upstream = serde_json::to_string(UPSTREAM)?;
    let run = format!(
        r#"(async () => {{
  const upstream = {upstream};
  const r = await axe.run(document, {{ runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }});
  return JSON.stringify(r.violations.map(v => ({{
    id: v.id,
    help: v.help,
    nodes: v.nodes.map(n => {{
      const el = document.querySelector(n.target[0]);
      return {{
        target: n.target.join(' '),
        upstream: !!el && upstream.some(s => el.closest(s)),
        summary: (n.failureSummary || '').split('\n').slice(1).join(' ').trim(),
      }};
    }}),
  }})));
}})()"#
    );
    let result = tab
        .evaluate(&run, true)
        .map_err(|e| anyhow!("axe did not run: {e}"))?;
    let json = result
        .value
        .and_then(|v| v.as_str().map(str::to_string))
        .ok_or_else(|| anyhow!("axe returned nothing"))?;
    serde_json::from_str(&json).context("axe's report is not what bookcheck expects")
}

/// Our findings as problem texts: every node that is not mdBook's own.
pub fn ours(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .flat_map(|f| {
            f.nodes.iter().filter(|n| !n.upstream).map(move |n| {
                format!(
                    "accessibility ({}): {} at {}; {}",
                    f.id, f.help, n.target, n.summary
                )
            })
        })
        .collect()
}

/// mdBook's findings, by rule, for the report (listed, not counted).
pub fn upstream(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.nodes.iter().any(|n| n.upstream))
        .map(|f| {
            let n = f.nodes.iter().filter(|n| n.upstream).count();
            format!("{} ({n} element(s) of mdBook's own)", f.id)
        })
        .collect()
}

/// Audits the page as it is now — a widget in one of its states — and returns our findings
/// and mdBook's own, each prefixed with `state`.
pub fn audit_state(tab: &Tab, script: &str, state: &str) -> Result<(Vec<String>, Vec<String>)> {
    let findings = audit(tab, script)?;
    let prefixed = |list: Vec<String>| list.into_iter().map(|p| format!("{state}: {p}")).collect();
    Ok((prefixed(ours(&findings)), prefixed(upstream(&findings))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(upstream: bool) -> Finding {
        Finding {
            id: "color-contrast".into(),
            help: "Elements must meet minimum color contrast ratio thresholds".into(),
            nodes: vec![Node {
                target: ".callout-title".into(),
                upstream,
                summary: "Element has insufficient color contrast of 2.68".into(),
            }],
        }
    }

    #[test]
    fn our_findings_count_and_mdbooks_are_listed() {
        let ours_ = ours(&[finding(false)]);
        assert_eq!(ours_.len(), 1);
        assert!(ours_[0].contains("color-contrast") && ours_[0].contains(".callout-title"));
        assert!(ours(&[finding(true)]).is_empty());
        assert_eq!(upstream(&[finding(true)]).len(), 1);
    }

    #[test]
    fn a_missing_axe_says_how_to_get_it() {
        let e = load(Path::new("/nonexistent/axe.min.js")).unwrap_err();
        assert!(format!("{e:#}").contains("npm install"), "{e:#}");
    }
}
