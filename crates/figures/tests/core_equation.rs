//! The core teaches what it grades: the memory equation as the first page states it (the
//! formula text of `generated/core_equation.md`, evaluated on the terms the page defines)
//! passes Challenge 1's and Challenge 2's graders, and the challenges' pages and hints send the
//! learner only to pages of the lesson.

use figures::pages::core_equation::{FORMULA, Terms, peak};
use grading::proofs::passes;
use grading::{Opt, Setup, seed};

/// Challenge 1's answers, built from the page's equation and nothing else.
mod page1 {
    use super::*;
    pub fn activation_bytes(batch: u64, width: u64) -> u64 {
        Terms::of(Setup::lesson(width, 1, batch, Opt::Sgd)).a
    }
    pub fn batch_bytes(setup: Setup) -> u64 {
        Terms::of(setup).d
    }
    pub fn top_of_backward(setup: Setup) -> u64 {
        Terms::of(setup).moments()[0]
    }
    pub fn fits(setup: Setup, card_bytes: u64) -> bool {
        peak(setup).unwrap() <= card_bytes
    }
}

/// Challenge 2's answers, the same way.
mod page2 {
    use super::*;
    pub fn parameter_count(inputs: u64, width: u64, layers: u64, classes: u64) -> u64 {
        let setup = Setup {
            inputs,
            width,
            layers,
            classes,
            batch: 0,
            optimizer: Opt::Sgd,
        };
        Terms::of(setup).p / 4
    }
    pub fn model_bytes(setup: Setup) -> u64 {
        let t = Terms::of(setup);
        t.p + t.s
    }
    pub fn update(setup: Setup) -> u64 {
        Terms::of(setup).moments()[2]
    }
    pub fn deepest_fit(setup: Setup, card_bytes: u64) -> u64 {
        let mut layers = 0;
        while peak(Setup {
            layers: layers + 1,
            ..setup
        })
        .unwrap()
            <= card_bytes
        {
            layers += 1;
        }
        layers
    }
}

#[path = "../../../solutions/challenge1/answer.rs"]
#[allow(dead_code)]
mod s1;
#[path = "../../../solutions/challenge2/answer.rs"]
#[allow(dead_code)]
mod s2;

fn book(path: &str) -> String {
    std::fs::read_to_string(figures::book::book_src().join(path)).unwrap()
}

#[test]
fn the_page_states_the_formula_that_is_graded() {
    let generated = book("generated/core_equation.md");
    assert!(
        generated.contains(&format!("peak = {FORMULA}")),
        "{generated}"
    );
    assert!(book("memory-equation.md").contains("{{#include generated/core_equation.md}}"));
}

#[test]
fn the_page_s_equation_passes_challenge_1() {
    let report = grading::challenge1::grade(&grading::challenge1::answers_of!(page1), seed());
    passes(&report, 30);
}

#[test]
fn the_page_s_equation_passes_challenge_2() {
    let report = grading::challenge2::grade(&grading::challenge2::answers_of!(page2), seed());
    passes(&report, 10);
}

/// The reference solutions' `fits` and `deepest_fit` (the stubs' given ones, over the
/// solutions' pieces and `grading::given`'s) say what the page's equation says.
#[test]
fn the_solutions_agree_with_the_page() {
    for optimizer in [Opt::Sgd, Opt::Adam] {
        for (width, layers, batch) in [
            (2000, 1, 1_173_000),
            (5000, 8, 32),
            (300, 40, 4096),
            (8, 3, 1),
        ] {
            let setup = Setup {
                inputs: 2,
                width,
                layers,
                classes: 2,
                batch,
                optimizer,
            };
            let p = peak(setup).unwrap();
            for card in [p - 1, p] {
                assert_eq!(s1::fits(setup, card), page1::fits(setup, card), "{setup:?}");
            }
            let card = 1 << 30;
            assert_eq!(
                s2::deepest_fit(setup, card),
                page2::deepest_fit(setup, card)
            );
        }
    }
}

/// Challenge 1's and 2's pages link only to the lesson's pages (and the glossary) before
/// their demos' sections: the challenge, its hints and its solution.
#[test]
fn the_challenges_point_only_to_core_pages() {
    let core = [
        "memory-equation.md",
        "mini-batching.md",
        "challenge-1.md",
        "networks.md",
        "challenge-2.md",
        "monitoring.md",
        "key-points.md",
        "glossary.md",
    ];
    for page in ["challenge-1.md", "challenge-2.md"] {
        let text = book(page);
        // The challenge's callout ends before its quiz or, without one, its demo's section.
        let challenge = text
            .split("## Predict, then check")
            .next()
            .unwrap()
            .split("## What the demo shows")
            .next()
            .unwrap();
        for link in challenge.split("](").skip(1) {
            let target = link.split([')', '#']).next().unwrap();
            assert!(
                target.is_empty() || core.contains(&target),
                "{page} sends the learner to {target}"
            );
        }
    }
}
