//! The review's verdict marks, measured in the page: mdbook-quiz draws them with CSS
//! `::before`, which axe leaves out, in colours `theme/quiz.css` adjusts per theme.

use super::{Report, Run};
use anyhow::Result;

/// WCAG AA's contrast for normal-size text.
const MIN_CONTRAST: f64 = 4.5;

/// `[mark, colour, background, ratio]` for each verdict mark of the review: the `::before`
/// colour against the first background that is not transparent among its ancestors.
const CONTRAST_SCRIPT: &str = r#"(() => {
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = el => { for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor; const v = rgb(c);
    if (v.length === 3 || (v.length === 4 && v[3] > 0)) return c; } return 'rgb(255, 255, 255)'; };
  const out = [];
  for (const el of document.querySelectorAll('.mdbook-quiz .md-flex.correct, .mdbook-quiz .md-flex.incorrect')) {
    const before = getComputedStyle(el, '::before');
    const fg = before.color, bg = background(el);
    const [a, b] = [lum(rgb(fg)), lum(rgb(bg))].sort((x, y) => y - x);
    out.push([before.content.replace(/^"|"$/g, ''), fg, bg, (a + 0.05) / (b + 0.05)]);
  }
  return JSON.stringify(out);
})()"#;

impl Run<'_> {
    /// The review's "✓ Correct" and "✗ Incorrect" are CSS `::before` text, which axe does not
    /// audit: their contrast with the background behind them must reach WCAG AA (4.5:1).
    pub(super) fn verdict_contrast(&self, report: &mut Report) -> Result<()> {
        let found = self.eval(CONTRAST_SCRIPT)?;
        let found: Vec<(String, String, String, f64)> = serde_json::from_str(&found)?;
        if found.is_empty() {
            report
                .problems
                .push("the review shows no correct/incorrect mark".into());
        }
        let mut seen: Vec<String> = Vec::new();
        for (mark, fg, bg, ratio) in found {
            let shown = format!("{mark} {ratio:.2}:1");
            if !seen.contains(&shown) {
                seen.push(shown);
            }
            if ratio < MIN_CONTRAST {
                report.problems.push(format!(
                    "contrast: the review's {mark:?} is {fg} on {bg}, {ratio:.2}:1 (AA needs \
                     {MIN_CONTRAST}:1)"
                ));
            }
        }
        report
            .states
            .push(format!("verdict marks' contrast: {}", seen.join(", ")));
        Ok(())
    }
}
