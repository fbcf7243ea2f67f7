//! The lesson's core pages (Mini-batching, Challenge 1, Memory in neural networks,
//! Challenge 2) and Setup: the sentences that describe the PyTorch code beside them, the
//! recorded runs they include, and what each count of copies or bytes is measured in.

use figures::data::{DEEP_BATCH, DEEP_WIDTH, equation, network};
use gpumem::mlp::Optimizer;
use std::path::PathBuf;

fn root() -> PathBuf {
    figures::book::book_src().parent().unwrap().to_path_buf()
}

/// A page of the book, its line breaks as spaces.
fn page(name: &str) -> String {
    std::fs::read_to_string(figures::book::book_src().join(format!("{name}.md")))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Challenge 1: the lessons' text says two hidden layers, their code (and the book's copy of
/// the loop) builds one, and the page says which the book uses.
#[test]
fn the_book_uses_the_one_hidden_layer_the_code_builds() {
    let loop_py = std::fs::read_to_string(root().join("pytorch/snippets/lesson_loop.py")).unwrap();
    let model = loop_py
        .split("# ANCHOR: model")
        .nth(1)
        .unwrap()
        .split("# ANCHOR_END: model")
        .next()
        .unwrap();
    assert_eq!(model.matches("nn.Linear(").count(), 2, "one hidden layer");
    // The note moved to Going further (Inside the caching allocator, "The lesson and the
    // engine").
    let text = page("allocator");
    assert!(text.contains("says two hidden layers; the code both run builds one"));
    assert!(text.contains("The book uses one hidden layer"));
}

/// Challenges 1 and 2, "On your own GPU": the page runs the script from the repository root
/// and includes its recorded run from the line that names the torch version, which was a
/// machine without CUDA, as the page says.
#[test]
fn own_gpu_sections_include_the_recorded_cpu_runs() {
    for n in [1, 2] {
        let text = page(&format!("challenge-{n}"));
        assert!(text.contains("## On your own GPU"));
        assert!(text.contains(&format!("python pytorch/challenge{n}.py")));
        // The script prints the engine's command for the card it held (`--device-memory`).
        assert!(text.contains("the engine's answer for that card"));
        assert!(text.contains(&format!(
            "{{{{#include ../pytorch/runs/challenge{n}.txt:3:}}}}"
        )));
        assert!(text.contains("On a CPU machine"));
        let script =
            std::fs::read_to_string(root().join(format!("pytorch/challenge{n}.py"))).unwrap();
        assert!(script.contains("torch.cuda.is_available()"));
        assert!(script.contains("\"--device-memory\"") || script.contains("card_args("));
        let run =
            std::fs::read_to_string(root().join(format!("pytorch/runs/challenge{n}.txt"))).unwrap();
        let third = run.lines().nth(2).unwrap();
        assert!(
            third.starts_with("# torch ") && third.contains("no CUDA"),
            "{third}"
        );
    }
    // Challenge 1 says the script prints `memory_summary()` with CUDA.
    let script = std::fs::read_to_string(root().join("pytorch/challenge1.py")).unwrap();
    assert!(script.contains("memory_summary("));
    assert!(page("challenge-1").contains("`memory_summary()`"));
}

/// Challenge 1: MemTracker's run counts "raw tensor bytes, not the allocator's blocks" —
/// in the recorded run the raw bytes are the fewer.
#[test]
fn memtracker_raw_bytes_are_below_the_engines_blocks() {
    let run = std::fs::read_to_string(root().join("pytorch/runs/challenge1.txt")).unwrap();
    let bytes = |marker: &str| -> u64 {
        let line = run.lines().find(|l| l.contains(marker)).unwrap();
        let open = line.rfind('(').unwrap();
        let digits: String = line[open + 1..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    let raw = bytes("raw bytes");
    let blocks = bytes("in the allocator's blocks");
    assert!(
        raw < blocks && blocks - raw < blocks / 100,
        "{raw} vs {blocks}"
    );
    assert!(page("challenge-1").contains("(raw tensor bytes, not the allocator's"));
}

/// Memory in neural networks: each hidden layer of 5 000 at batch 32 with SGD adds "a little
/// more than the raw bytes computed above" (the page's code: (H² + H) values, float32, with a
/// gradient each), and its activation is "a few hundred KiB".
#[test]
fn a_layer_in_blocks_is_a_little_more_than_its_raw_bytes() {
    let peak = |layers| {
        equation(&network(DEEP_WIDTH, layers, Optimizer::LESSON), DEEP_BATCH)
            .unwrap()
            .peak_allocated
    };
    let per_layer = peak(2) - peak(1);
    let raw = (DEEP_WIDTH * DEEP_WIDTH + DEEP_WIDTH) * 4 * 2;
    assert!(
        per_layer > raw && per_layer < raw + raw / 50,
        "{per_layer} vs {raw}"
    );
    let activation = DEEP_BATCH * DEEP_WIDTH * 4;
    assert!((100 << 10..1 << 20).contains(&activation), "{activation}");
    let text = page("networks");
    assert!(text.contains("a little more than the raw bytes computed above"));
    assert!(text.contains("a layer's activation is a few hundred KiB"));
}

/// Memory in neural networks and Challenge 2: wherever Adam's "five" copies are counted,
/// the paragraph names the implementation that makes five (`foreach`).
#[test]
fn five_copies_name_the_adam_implementation() {
    for name in ["networks", "challenge-2", "fitting-more"] {
        let raw =
            std::fs::read_to_string(figures::book::book_src().join(format!("{name}.md"))).unwrap();
        for para in raw.split("\n\n") {
            let p = para.split_whitespace().collect::<Vec<_>>().join(" ");
            if p.contains("five copies") || p.contains("against five") {
                assert!(p.contains("`foreach`"), "{name}: {p}");
            }
        }
    }
    let text = page("fitting-more");
    assert!(text.contains("`fused=True` makes none (four)"));
    assert!(text.contains("`foreach=False` one parameter at a time"));
}

/// The core pages never say "measured" without saying by what: they name the engine's plan,
/// MemTracker or a real GPU instead.
#[test]
fn core_pages_say_what_measured() {
    for name in ["mini-batching", "challenge-1", "networks", "challenge-2"] {
        let text = page(name).to_lowercase();
        assert!(!text.contains("measur"), "{name} says measured");
    }
    for name in ["challenge-1", "challenge-2"] {
        assert!(
            page(name).contains("`plan` [backing](glossary.md#backing)"),
            "{name}"
        );
    }
}

/// Setup: the first grade before the core's two demos build (the exercises build apart),
/// the calculator served (not a `file://` page); mdBook and mdbook-quiz's install, the five
/// demos and the optional PyTorch scripts on Setup, further, linked from Setup.
#[test]
fn setup_grades_first_builds_the_core_demos_and_serves_the_book() {
    let summary = std::fs::read_to_string(figures::book::book_src().join("SUMMARY.md")).unwrap();
    let challenges = summary.matches("(challenge-").count();
    assert_eq!(challenges, 5);
    let text = page("setup");
    let grade = text.find("cd exercises/challenge1 && cargo test").unwrap();
    let build = text
        .find("cargo build -p challenge1 -p challenge2")
        .unwrap();
    assert!(
        grade < build,
        "Setup grades before it starts the demos' build"
    );
    assert!(text.contains("`target/exercises`"));
    assert!(text.contains("mdbook serve"));
    assert!(text.contains("setup-further.md#serving-the-book"));
    assert!(text.contains("setup-further.md#pytorch-on-your-own-gpu"));
    let further = page("setup-further");
    assert!(further.contains("cargo install mdbook-quiz"));
    let all = (1..=challenges)
        .map(|n| format!("-p challenge{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(further.contains(&format!("cargo build {all}")));
    assert!(further.contains("python pytorch/challenge2.py"));
    let config = std::fs::read_to_string(root().join("exercises/.cargo/config.toml")).unwrap();
    assert!(config.contains("target-dir"), "{config}");
}

/// The first page teaches the six kinds of memory and the equation without the allocator's
/// vocabulary, which Monitoring and "Going further" define: its prose and its chart's alt text
/// name none of it (the calculator's output, the engine's own, is pointed to instead).
#[test]
fn the_first_page_uses_no_allocator_internals() {
    let text = page("memory-equation");
    let alt =
        std::fs::read_to_string(figures::book::book_src().join("generated/alt_memory_vs_batch.md"))
            .unwrap();
    let prose = text
        .replace(
            "Its fine print (reserved memory, segments) is explained on",
            "",
        )
        .to_lowercase();
    for word in [
        "block",
        "segment",
        "20 mib",
        "is_exact",
        "band_margin",
        "requested_peak",
        "cublas",
        "reserved",
        "max_memory_allocated",
        "fragment",
    ] {
        assert!(!prose.contains(word), "the first page says {word:?}");
        assert!(
            !alt.to_lowercase().contains(word),
            "its chart's alt says {word:?}"
        );
    }
    // "mini-batch" comes with its definition (a glossary link) the first time.
    let first = prose
        .find("mini-batch")
        .expect("the page names mini-batches");
    assert!(prose[first..].starts_with("mini-batch](glossary.md#batch)"));
}

/// Challenge 2: the demo agrees with its page — it names the tensor whose allocation failed
/// (as the page does), trains with the learning rate of the loop the book shows
/// (`lesson_loop.py`, which the challenges' scripts and Challenge 1's demo share), and lists its attempts in the order it tried them.
#[test]
fn challenge2_demo_says_what_its_page_says() {
    let loop_py = std::fs::read_to_string(root().join("pytorch/snippets/lesson_loop.py")).unwrap();
    let lr = loop_py
        .split("lr=")
        .nth(1)
        .unwrap()
        .split([')', ','])
        .next()
        .unwrap()
        .trim();
    let demo =
        std::fs::read_to_string(figures::book::book_src().join("generated/demo_challenge2.txt"))
            .unwrap();
    assert!(demo.contains(&format!("sgd (lr {lr})")), "{demo}");
    // One learning rate: the challenges' scripts and Challenge 1's demo train with it too.
    let lesson_py = std::fs::read_to_string(root().join("pytorch/lesson.py")).unwrap();
    assert!(lesson_py.contains(&format!("SGD(model.parameters(), lr={lr})")));
    let demo1 =
        std::fs::read_to_string(figures::book::book_src().join("generated/demo_challenge1.txt"))
            .unwrap();
    assert!(demo1.contains(&format!("sgd (lr {lr})")), "{demo1}");
    let sgd = figures::data::deepest_fit(gpumem::mlp::Optimizer::LESSON).unwrap();
    assert!(
        demo.contains(&format!("allocating `{}`", sgd.oom.label)),
        "{demo}"
    );
    assert!(page("challenge-2").contains("names the tensor whose allocation failed"));
    // In the order tried: doubling, then bisection, so the depths are not sorted.
    let depths: Vec<u64> = demo
        .split("Attempts, in the order tried")
        .nth(1)
        .unwrap()
        .split("\nResult")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(depths.windows(2).any(|w| w[1] < w[0]), "{depths:?}");
}
