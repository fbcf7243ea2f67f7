//! Challenge 5 (`challenge-5.md`): more than one card — what the demo prints for the graded
//! schemes, and how closely the grader compares each.

use anyhow::Result;
use gpumem::parallel::Scheme;

use super::transcript;

/// The demo's arguments the page quotes: the Adam network (the page's and the grader's
/// lesson setup) under the schemes the exercise grades.
pub fn demo_args() -> Vec<String> {
    let schemes: Vec<&str> = graded_schemes().iter().map(|s| s.name()).collect();
    ["challenge5", "--optimizer", "adam", "--scheme"]
        .into_iter()
        .map(String::from)
        .chain([schemes.join(",")])
        .collect()
}

/// The schemes the exercise grades: those that split the batch.
fn graded_schemes() -> Vec<Scheme> {
    Scheme::ALL
        .into_iter()
        .filter(|s| s.pipeline().is_none())
        .collect()
}

/// `cargo run -p challenge5 -- --optimizer adam --scheme …`, the command (inline).
pub fn challenge5_demo_command() -> Result<String> {
    Ok(format!(
        "cargo run -p challenge5 -- {}",
        demo_args()[1..].join(" ")
    ))
}

/// What that command prints.
pub fn challenge5_demo() -> Result<String> {
    transcript(|| demos::challenge5::run(demo_args()))
}

/// How closely the grader compares `card_bytes` under each scheme (inline): `to the byte
/// under ddp and ddp-bucket-view, within 0.1 % under zero1, …`.
pub fn challenge5_tolerances() -> Result<String> {
    let mut groups: Vec<(f64, Vec<String>)> = Vec::new();
    for scheme in graded_schemes() {
        let t = grading::challenge5::tolerance(scheme);
        let name = format!("`{}`", scheme.name());
        match groups.iter_mut().find(|(g, _)| *g == t) {
            Some((_, names)) => names.push(name),
            None => groups.push((t, vec![name])),
        }
    }
    let words: Vec<String> = groups
        .into_iter()
        .map(|(t, names)| {
            let how = if t == 0.0 {
                "to the byte".to_string()
            } else {
                format!("within {} %", percent(t))
            };
            format!("{how} under {}", names.join(" and "))
        })
        .collect();
    Ok(words.join(", "))
}

/// `0.1`, `10`, `12.5`: a fraction as a percentage without trailing zeros.
fn percent(fraction: f64) -> String {
    let text = format!("{:.3}", fraction * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
