//! No spoilers: nothing a learner reads before a challenge gives its answer. For Challenge 1,
//! the largest batch that fits (the demo's last line) and the equation's (its guess asks for
//! it); for Challenge 2, the deepest networks
//! with SGD and with Adam — as the engine finds them, in every way the book prints a number
//! (`655360`, `655,360`, `655 360` with a space, a narrow or a thin one).
//!
//! What is read before a challenge: every page before its page in `SUMMARY.md`'s order, and its
//! own page up to the end of its "Guess first" paragraph (the answers may follow the guess);
//! on each, the text with every include expanded (generated numbers, tables, transcripts, the
//! charts' alt text), its quizzes (prompts, choices and feedback: all shown before the
//! challenge) and the text its SVG charts draw; and the questions of the challenge's own
//! quizzes, which ask for predictions. The calculator's first state is checked in the
//! browser (`bookcheck calculator`).

use crate::data::{LESSON_WIDTH, adam, deepest_fit, largest_batch_on_card};
use crate::reading::{pages, shown};
use anyhow::{Context, Result, anyhow};
use gpumem::mlp::Optimizer;
use std::path::Path;

/// Separators of digit groups the book uses, and the decimal marks.
const GROUPING: [char; 5] = [',', ' ', '\u{202f}', '\u{2009}', '\u{a0}'];

/// A challenge: its page, and its answers with what each is.
#[derive(Debug)]
pub struct Challenge {
    pub page: &'static str,
    pub answers: Vec<(String, u64)>,
}

/// Challenges 1 and 2, with the engine's answers.
pub fn challenges() -> Result<Vec<Challenge>> {
    let largest = largest_batch_on_card(LESSON_WIDTH)?
        .ok_or_else(|| anyhow!("not even one row fits on the card"))?;
    Ok(vec![
        Challenge {
            page: "challenge-1.md",
            answers: vec![
                ("the largest batch that fits".into(), largest.rows),
                (
                    "the largest batch by the equation".into(),
                    crate::pages::challenge_1::equation_largest_rows()?,
                ),
            ],
        },
        Challenge {
            page: "challenge-2.md",
            answers: vec![
                (
                    "the deepest network with SGD".into(),
                    deepest_fit(Optimizer::LESSON)?.layers,
                ),
                (
                    "the deepest network with Adam".into(),
                    deepest_fit(adam())?.layers,
                ),
            ],
        },
    ])
}

/// `n` in every form the book prints it.
pub fn forms(n: u64) -> Vec<String> {
    let digits = n.to_string();
    let mut out = vec![digits.clone()];
    if digits.len() > 3 {
        for sep in &GROUPING[..] {
            let mut grouped = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    grouped.push(*sep);
                }
                grouped.push(c);
            }
            out.push(grouped);
        }
    }
    out
}

/// Whether `text` holds `form` as a number of its own: not part of a longer number (`1.34`,
/// `340`, `1 234`) nor of a name (`sm_85`, `layer34`).
pub fn holds(text: &str, form: &str) -> bool {
    text.match_indices(form).any(|(at, _)| {
        let before: Vec<char> = text[..at].chars().rev().take(2).collect();
        let after: Vec<char> = text[at + form.len()..].chars().take(2).collect();
        let joins = |near: &[char]| match near {
            [c, ..] if c.is_alphanumeric() || *c == '_' => true,
            [c, d, ..] => (*c == '.' || GROUPING.contains(c)) && d.is_ascii_digit(),
            _ => false,
        };
        !joins(&before) && !joins(&after)
    })
}

/// What a learner reads on page `file` (relative to `src`), to the end of `until`'s paragraph
/// when given: its text with includes expanded, its quizzes and its charts' drawn text, each
/// with where it comes from.
pub fn read_before(file: &str, src: &Path, until: Option<&str>) -> Result<Vec<(String, String)>> {
    let markdown = std::fs::read_to_string(src.join(file)).with_context(|| file.to_string())?;
    let mut text = shown(&markdown, file, src);
    if let Some(marker) = until {
        let at = text
            .find(marker)
            .ok_or_else(|| anyhow!("{file} has no `{marker}` paragraph"))?;
        let end = text[at..].find("\n\n").map_or(text.len(), |e| at + e);
        text.truncate(end);
    }
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(quiz) = line.trim().strip_prefix("{{#quiz ") {
            let path = quiz.trim_end_matches("}}").trim();
            let toml = std::fs::read_to_string(src.join(path)).with_context(|| path.to_string())?;
            out.push((format!("{file}: quiz {path}"), toml));
        }
        let mut rest = line;
        while let Some(at) = rest.find("](figures/") {
            let image = &rest[at + 2..];
            let end = image.find(')').unwrap_or(image.len());
            let svg = &image[..end];
            if svg.ends_with(".svg") {
                let drawn =
                    std::fs::read_to_string(src.join(svg)).with_context(|| svg.to_string())?;
                out.push((format!("{file}: chart {svg}"), drawn_text(&drawn)));
            }
            rest = &image[end..];
        }
    }
    out.push((file.to_string(), text));
    Ok(out)
}

/// The text an SVG shows or says: its `<text>`, `<title>` and `<desc>` elements.
fn drawn_text(svg: &str) -> String {
    let mut out = String::new();
    for tag in ["text", "title", "desc"] {
        let mut rest = svg;
        while let Some(at) = rest.find(&format!("<{tag}")) {
            let body = &rest[at..];
            let (Some(open), Some(close)) = (body.find('>'), body.find(&format!("</{tag}>")))
            else {
                break;
            };
            if open < close {
                out.push_str(&body[open + 1..close]);
                out.push('\n');
            }
            rest = &body[close..];
        }
    }
    out
}

/// Each answer of each challenge found before it: `(challenge page, answer, where)`.
pub fn spoilers(src: &Path) -> Result<Vec<String>> {
    let order: Vec<String> = pages(src)?.into_iter().map(|p| p.file).collect();
    let mut found = Vec::new();
    for challenge in challenges()? {
        let index = order
            .iter()
            .position(|f| f == challenge.page)
            .ok_or_else(|| anyhow!("SUMMARY.md has no {}", challenge.page))?;
        let mut read = Vec::new();
        for file in &order[..index] {
            read.extend(read_before(file, src, None)?);
        }
        read.extend(read_before(challenge.page, src, Some("Guess first"))?);
        // Its own quizzes come after the guess, but ask for predictions: their questions
        // (not their choices or feedback) must not state the answers either.
        for (place, text) in read_before(challenge.page, src, None)? {
            if place.contains(": quiz ") {
                let prompts: Vec<&str> = text
                    .lines()
                    .filter(|l| l.trim_start().starts_with("prompt.prompt"))
                    .collect();
                read.push((format!("{place} (a question)"), prompts.join("\n")));
            }
        }
        for (what, n) in &challenge.answers {
            for (place, text) in &read {
                if let Some(form) = forms(*n).into_iter().find(|f| holds(text, f)) {
                    found.push(format!(
                        "{}'s answer, {what} ({form}), is in {place}",
                        challenge.page
                    ));
                }
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_found_in_every_form_and_only_as_themselves() {
        for text in [
            "is 655 360 rows",
            "is 655,360.",
            "(655360)",
            "655\u{202f}360 rows",
        ] {
            assert!(forms(655_360).iter().any(|f| holds(text, f)), "{text}");
        }
        assert!(holds("85 hidden layers, 34 with Adam", "34"));
        assert!(holds("SGD: 85 fit,", "85"));
        for text in [
            "0.34 GiB", "340 MiB", "1 234", "sm_85", "layer34", "34.5", "85,000",
        ] {
            assert!(!holds(text, "34") && !holds(text, "85"), "{text}");
        }
    }

    #[test]
    fn charts_say_what_they_draw() {
        let svg = "<svg><title>alt 85</title><metadata>{\"x\": 34}</metadata>\
            <text x=\"1\">SGD: 85 fit,</text><line x1=\"34\"/></svg>";
        let drawn = drawn_text(svg);
        assert!(holds(&drawn, "85"));
        assert!(!holds(&drawn, "34"), "{drawn}");
    }

    /// The test the issue asks for: no challenge's answer before its guess.
    #[test]
    fn no_challenge_answer_is_read_before_its_guess() {
        let found = spoilers(&crate::book::book_src()).unwrap();
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}
