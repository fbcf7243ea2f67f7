//! `cargo run -p figures`: regenerates every chart (`src/figures/*.svg`) and every quoted
//! number and transcript (`src/generated/`) of the book, then lists what it wrote. `--check`
//! writes nothing and fails if a committed file is out of date (what the test does too).

use anyhow::Context;
use figures::ARTIFACTS;
use figures::book::book_src;
use figures::files::{stale, write_all};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: cargo run -p figures [-- --check | --measure | --reading]\n\
  Regenerates the book's charts (src/figures/) and quoted numbers (src/generated/).\n\
  --check     write nothing; exit 1 if any committed file is out of date\n\
  --measure   first time challenge 4's demo again on this machine (minutes; use --release)\n\
              and record it in crates/figures/measured/challenge4_times.json\n\
  --reading   write nothing; print each page's rendered words and quiz questions, and the\n\
              lesson's totals against their bounds (exit 1 when over)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (check, measure) = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => (false, false),
        ["--check"] => (true, false),
        ["--measure"] => (false, true),
        ["--reading"] => {
            return match figures::reading::pages(&book_src()) {
                Ok(pages) => {
                    for p in &pages {
                        println!(
                            "{:>6} words {:>2} questions  {} / {}",
                            p.words, p.questions, p.part, p.file
                        );
                    }
                    let (words, questions) = figures::reading::core_totals(&pages);
                    println!("the lesson: {words} words, {questions} quiz questions");
                    match figures::reading::within_bounds(&pages) {
                        Ok(()) => ExitCode::SUCCESS,
                        Err(e) => {
                            eprintln!("figures: {e}");
                            ExitCode::from(1)
                        }
                    }
                }
                Err(e) => {
                    eprintln!("figures: error: {e:#}");
                    ExitCode::from(2)
                }
            };
        }
        ["-h" | "--help"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if measure {
        let saved = figures::measured::measure().and_then(|r| figures::measured::save(&r));
        match saved {
            Ok(path) => println!("measured: {}", path.display()),
            Err(e) => {
                eprintln!("figures: error: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("figures: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(check: bool) -> anyhow::Result<bool> {
    let started = Instant::now();
    let src = book_src();
    // Rendered here, not with `render_all`, to report how long each artifact takes.
    let mut rendered = Vec::new();
    let mut took = Vec::new();
    for a in ARTIFACTS {
        let t = Instant::now();
        let text = (a.render)().with_context(|| format!("rendering {}", a.path))?;
        took.push(t.elapsed());
        rendered.push((a.path, text));
    }
    if check {
        let stale = stale(&src, &rendered)?;
        for s in &stale {
            println!("stale: {s}");
        }
        if stale.is_empty() {
            println!("{} files current", rendered.len());
        } else {
            println!("run `cargo run -p figures` and commit src/figures and src/generated");
        }
        return Ok(stale.is_empty());
    }
    let figures::files::Written {
        artifacts: written,
        removed,
    } = write_all(&src, &rendered)?;
    for (((path, changed), artifact), took) in written.iter().zip(ARTIFACTS).zip(&took) {
        let mark = if *changed { "wrote    " } else { "unchanged" };
        println!(
            "{mark} src/{path:<36} {:>5} ms  {}",
            took.as_millis(),
            artifact.about
        );
    }
    for orphan in &removed {
        println!("removed   src/{orphan} (no artifact makes it)");
    }
    println!(
        "{} files in {:.1} s",
        written.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(true)
}
