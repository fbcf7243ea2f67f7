//! Strings between Rust and the page: CSS selectors, the explanation's Markdown as the page
//! renders it, and short excerpts for reports.

/// `s` as a quoted CSS string, for an attribute selector.
pub(super) fn css_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\a "),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text without Markdown's code marks and with whitespace collapsed, to compare the
/// explanation's Markdown with what the page renders.
pub(super) fn plain(text: &str) -> String {
    let text = text.replace('`', "");
    let text = text.strip_prefix("Context:").unwrap_or(&text);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn clip(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_strings_escape_quotes_and_backslashes() {
        assert_eq!(css_string(r#"a "b" \c"#), r#""a \"b\" \\c""#);
    }

    #[test]
    fn plain_text_ignores_code_marks_and_the_label() {
        assert_eq!(plain("Context:\n`a0`  grows"), "a0 grows");
    }
}
