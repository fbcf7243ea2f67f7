//! Issue 37's cross-checks in the book: the recorder's lesson traces replayed on the ideal
//! card give the engine's own Challenge 1 and 2 answers (the fixtures' freshness is checked by
//! gpumem's `recorded_models` test); the core page stays within its 600 rendered words.

use figures::pages::own_model::lesson_answers;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn the_recorder_and_the_engine_give_the_lessons_answers() {
    let a = lesson_answers().unwrap();
    assert_eq!(
        a.replay_batch,
        Some(a.engine_batch),
        "Challenge 1: the replay's largest batch against the engine's"
    );
    assert_eq!(a.depths.len(), 2);
    for (name, at, fits, next, engine) in a.depths {
        assert_eq!(at, engine, "{name}: recorded at the engine's deepest");
        assert!(fits, "{name}: {at} layers replayed must fit");
        assert!(!next, "{name}: {} layers replayed must run out", at + 1);
    }
}

#[test]
fn the_core_page_is_at_most_600_rendered_words() {
    let src = root().join("src");
    let text = std::fs::read_to_string(src.join("own-model.md")).unwrap();
    let words = figures::reading::page_words(&text, "own-model.md", &src);
    assert!(words <= 600, "own-model.md has {words} rendered words");
    assert!(words >= 150, "own-model.md has only {words} rendered words");
}
