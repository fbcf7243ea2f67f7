//! `bookcheck links book/` and `bookcheck browser book/ --screenshots DIR`: the checks CI runs
//! on the built book after `mdbook build`. Exit status 0 means no problem was found; 1 lists
//! the problems; 2 means the check could not run (bad arguments, no browser, no book).

use bookcheck::{browser, calculator, links, quiz, replay, words};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "bookcheck",
    about = "Checks the built mdBook: links, anchors and images resolve; pages load in Chromium without errors."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check that every relative link, #anchor and image in the built HTML resolves
    /// (external http(s) links are skipped).
    Links {
        /// The book's output folder (what `mdbook build` wrote, usually `book`).
        book: PathBuf,
    },
    /// Open every page in headless Chromium; fail on any JavaScript error or image that did
    /// not load.
    Browser {
        /// The book's output folder (what `mdbook build` wrote, usually `book`).
        book: PathBuf,
        /// Save PNG screenshots of the first page and of pages whose file name matches
        /// --screenshot-match into this folder.
        #[arg(long, value_name = "DIR")]
        screenshots: Option<PathBuf>,
        /// Photograph pages whose file name contains this text (repeatable; replaces the
        /// default). The first page is always photographed.
        #[arg(long, value_name = "TEXT", default_value = "challenge")]
        screenshot_match: Vec<String>,
        #[command(flatten)]
        chrome: Chrome,
        /// Also audit every page with axe-core (WCAG 2.x A and AA) from this axe.min.js;
        /// mdBook's own elements are listed apart, not counted.
        #[arg(long, value_name = "PATH")]
        axe: Option<PathBuf>,
    },
    /// Drive the in-page calculator: its committed WebAssembly module must answer the check
    /// setups exactly as the engine does natively, and the widget must show the engine's
    /// answers when it fits, does not fit, and refuses a width typed from the keyboard.
    Calculator {
        /// The book's output folder (what `mdbook build` wrote, usually `book`).
        book: PathBuf,
        /// The page with the calculator to drive.
        #[arg(long, default_value = calculator::DEFAULT_PAGE)]
        page: String,
        /// Save a PNG of the calculator in each state into this folder.
        #[arg(long, value_name = "DIR")]
        screenshots: Option<PathBuf>,
        #[command(flatten)]
        chrome: Chrome,
        /// Also audit the page in each of the widget's states with axe-core from this
        /// axe.min.js.
        #[arg(long, value_name = "PATH")]
        axe: Option<PathBuf>,
    },
    /// Drive the replay in the page: give it each fixture as a reader would, and require its
    /// answer (report, text, exit status, or refusal) to equal `memviz replay`'s for the same
    /// file and flags; time a 100 000-entry snapshot made now; photograph and audit each state.
    Replay {
        /// The book's output folder (what `mdbook build` wrote, usually `book`).
        book: PathBuf,
        /// The page with the replay to drive.
        #[arg(long, default_value = replay::DEFAULT_PAGE)]
        page: String,
        /// The memviz program whose answers the page's must equal.
        #[arg(long, value_name = "PATH", default_value = "target/debug/memviz")]
        memviz: PathBuf,
        /// The repository's root, where the fixtures are.
        #[arg(long, value_name = "DIR", default_value = ".")]
        repo: PathBuf,
        /// Only the shipped recording, asked for from the keyboard, and axe (for the other themes).
        #[arg(long)]
        quick: bool,
        /// Save a PNG of the replay in each state into this folder.
        #[arg(long, value_name = "DIR")]
        screenshots: Option<PathBuf>,
        #[command(flatten)]
        chrome: Chrome,
        /// Also audit the page in each state with axe-core from this axe.min.js.
        #[arg(long, value_name = "PATH")]
        axe: Option<PathBuf>,
    },
    /// Answer one mdbook-quiz quiz from the keyboard: first question wrong (the review must
    /// mark it and show its explanation), then, after a reload, all right (all accepted).
    Quiz {
        /// The book's output folder (what `mdbook build` wrote, usually `book`).
        book: PathBuf,
        /// The page whose first quiz is answered.
        #[arg(long, default_value = quiz::DEFAULT_PAGE)]
        page: String,
        /// Save PNGs of the quiz unstarted, on its first question, answered wrongly and rightly.
        #[arg(long, value_name = "DIR")]
        screenshots: Option<PathBuf>,
        #[command(flatten)]
        chrome: Chrome,
        /// Also audit the quiz's question and review with axe-core from this axe.min.js.
        #[arg(long, value_name = "PATH")]
        axe: Option<PathBuf>,
    },
    /// Count the words a reader sees on each page of the lesson in Chromium, by the book's
    /// rule, and compare with the count the book prints (generated/reading_words.json).
    Words {
        /// The book's output folder (what `mdbook build` wrote, usually `book`).
        book: PathBuf,
        /// Save each page's counted text into this folder (PAGE.txt).
        #[arg(long, value_name = "DIR")]
        text: Option<PathBuf>,
        #[command(flatten)]
        chrome: Chrome,
    },
}

/// The browser every check that opens pages runs.
#[derive(Args)]
struct Chrome {
    /// Select this mdBook theme before each page loads (e.g. light, rust, coal, navy, ayu).
    #[arg(long)]
    theme: Option<String>,
    /// The Chromium executable.
    #[arg(long, value_name = "PATH", default_value = browser::DEFAULT_CHROMIUM)]
    chromium: PathBuf,
    /// Seconds a page, or one step on it (an answer, a quiz's screen), may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    timeout: u64,
}

impl Chrome {
    fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout.max(1))
    }
}

/// The options of a check that drives one page's widget.
fn widget(
    page: String,
    screenshots: Option<PathBuf>,
    chrome: Chrome,
    axe: Option<PathBuf>,
) -> bookcheck::session::WidgetOptions {
    bookcheck::session::WidgetOptions {
        timeout: chrome.timeout(),
        chromium: chrome.chromium,
        page,
        screenshots,
        theme: chrome.theme,
        axe,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let started = Instant::now();
    let result = match cli.command {
        Command::Links { book } => run_links(&book),
        Command::Browser {
            book,
            screenshots,
            screenshot_match,
            chrome,
            axe,
        } => run_browser(
            &book,
            &browser::Options {
                timeout: chrome.timeout(),
                chromium: chrome.chromium,
                screenshots,
                screenshot_matches: screenshot_match,
                theme: chrome.theme,
                axe,
            },
        ),
        Command::Calculator {
            book,
            page,
            screenshots,
            chrome,
            axe,
        } => run_calculator(&book, &widget(page, screenshots, chrome, axe)),
        Command::Replay {
            book,
            page,
            memviz,
            repo,
            quick,
            screenshots,
            chrome,
            axe,
        } => run_replay(
            &book,
            &replay::Options {
                widget: widget(page, screenshots, chrome, axe),
                memviz,
                repo,
                quick,
            },
        ),
        Command::Quiz {
            book,
            page,
            screenshots,
            chrome,
            axe,
        } => run_quiz(&book, &widget(page, screenshots, chrome, axe)),
        Command::Words { book, text, chrome } => run_words(
            &book,
            &words::Options {
                timeout: chrome.timeout(),
                chromium: chrome.chromium,
                text,
            },
        ),
    };
    match result {
        Ok(0) => {
            eprintln!("bookcheck: ok ({:.1} s)", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Ok(n) => {
            eprintln!("bookcheck: {n} problem(s)");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("bookcheck: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run_links(book: &std::path::Path) -> anyhow::Result<usize> {
    let pages = bookcheck::site::pages(book)?.len();
    let broken = links::check(book)?;
    for b in &broken {
        println!("broken link: {b}");
    }
    println!("links: {pages} pages checked, {} broken", broken.len());
    Ok(broken.len())
}

fn run_browser(book: &std::path::Path, options: &browser::Options) -> anyhow::Result<usize> {
    let report = browser::check(book, options)?;
    for (page, took) in &report.pages {
        println!("opened {page} ({:.2} s)", took.as_secs_f64());
    }
    for p in &report.problems {
        println!("page problem: {p}");
    }
    for u in &report.upstream {
        println!("mdBook's own (not counted): {u}");
    }
    for s in &report.screenshots {
        println!("screenshot: {}", s.display());
    }
    println!(
        "browser: {} pages opened, {} problem(s)",
        report.pages.len(),
        report.problems.len()
    );
    Ok(report.problems.len())
}

fn run_calculator(book: &std::path::Path, options: &calculator::Options) -> anyhow::Result<usize> {
    let report = calculator::check(book, options)?;
    report.widget.print("calculator");
    println!(
        "calculator: {} setups compared with the native engine, {} problem(s)",
        report.compared,
        report.widget.problems.len()
    );
    Ok(report.widget.problems.len())
}

fn run_replay(book: &std::path::Path, options: &replay::Options) -> anyhow::Result<usize> {
    let report = replay::check(book, options)?;
    report.widget.print("replay");
    if let Some((worker, wall)) = report.large {
        println!(
            "replay: the {}-entry snapshot replayed in {worker:.0} ms in the page's worker, \
             {wall:.0} ms from the file given to the answer shown",
            replay::LARGE_EVENTS
        );
    }
    let compared = if options.quick {
        "quick: the shipped recording from the keyboard, no fixture compared".to_string()
    } else {
        format!("{} fixtures compared with memviz replay", report.compared)
    };
    println!(
        "replay: {compared}, {} problem(s)",
        report.widget.problems.len()
    );
    Ok(report.widget.problems.len())
}

fn run_quiz(book: &std::path::Path, options: &quiz::Options) -> anyhow::Result<usize> {
    let report = quiz::check(book, options)?;
    report.print("quiz");
    println!("quiz: {} problem(s)", report.problems.len());
    Ok(report.problems.len())
}

fn run_words(book: &std::path::Path, options: &words::Options) -> anyhow::Result<usize> {
    let pages = words::check(book, options)?;
    println!(
        "{:<28} {:>6} {:>8} {:>7}",
        "page", "book", "browser", "diff"
    );
    let mut problems = 0;
    for p in &pages {
        let flag = if p.within_tolerance() {
            ""
        } else {
            problems += 1;
            "  over the tolerance"
        };
        println!(
            "{:<28} {:>6} {:>8} {:>+6.1}%{flag}",
            p.page,
            p.book,
            p.browser,
            p.difference() * 100.0
        );
    }
    let (book_total, browser_total) = pages
        .iter()
        .fold((0, 0), |(a, b), p| (a + p.book, b + p.browser));
    println!(
        "words: {} pages, {book_total} words by the book, {browser_total} in the browser; \
         {problems} page(s) differ by more than {:.0} %",
        pages.len(),
        words::TOLERANCE * 100.0
    );
    Ok(problems)
}
