//! Claims found wrong on a second full read of the book (issue 17's last item): each test
//! names the page and fails if the sentence it guards drifts from the engine or the tables.

use figures::data::{LESSON_WIDTH, equation};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::mlp::MlpConfig;

/// The text of one page of the book.
fn page(name: &str) -> String {
    std::fs::read_to_string(figures::files::book_src().join(format!("{name}.md"))).unwrap()
}

/// A generated file of the book.
fn generated(name: &str) -> String {
    std::fs::read_to_string(figures::files::book_src().join("generated").join(name)).unwrap()
}

/// What lives in GPU memory: the table's setups run "from a toy of a few neurons to the
/// lesson's whole training set in one batch" (not a one-neuron toy), and the page types no
/// count of them (the note under the table gives it).
#[test]
fn the_equation_table_spans_a_toy_to_the_whole_training_set() {
    let setups = gpumem::estimate::reference_setups();
    let narrowest = setups.iter().map(|(c, _)| c.hidden).min().unwrap();
    assert!((2..10).contains(&narrowest), "{narrowest}");
    assert!(
        setups
            .iter()
            .any(|(c, b)| *b == FULL && c.hidden == LESSON_WIDTH && c.layers == 1)
    );
    let text = page("memory-equation");
    assert!(text.contains("from a toy of a few neurons to the\nlesson's whole training set"));
    assert!(!text.contains(&format!("for {} setups", setups.len())));
}

/// Mini-batching: the row it cites for "less than a megabyte at a batch of 32" is a row of
/// the equation's table, under the label the table gives it.
#[test]
fn mini_batching_cites_a_row_the_table_has() {
    let label = "1 × 2\u{202f}000, SGD";
    assert!(page("mini-batching").contains(&format!("`{label}` at batch 32")));
    // The table binds "1 × 2 000" with no-break spaces; the page's code span need not.
    let table = generated("estimate_table.md").replace('\u{a0}', " ");
    assert!(table.contains(&format!("| {label} | 32 |")));
    let at32 = equation(&MlpConfig::lesson(LESSON_WIDTH), 32).unwrap();
    assert!(at32.peak_allocated < 1_000_000);
}
