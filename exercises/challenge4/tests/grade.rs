//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

/// The core: passes once `peak_bytes`'s float32 arm and `loss_scale` do. A going-further part
/// still at `todo!()` is reported and left for later; one you answer must pass too.
#[test]
fn learner_answer() -> Result<(), String> {
    let answers = grading::challenge4::answers_of!(challenge4_exercise);
    grading::challenge4::grade(&answers, grading::seed()).verdict()
}

/// Everything, the going-further parts too: `cargo test -- --ignored`.
#[test]
#[ignore = "going further: run with `cargo test -- --ignored`"]
fn learner_answer_going_further() -> Result<(), String> {
    let answers = grading::challenge4::answers_of!(challenge4_exercise);
    grading::challenge4::grade(&answers, grading::seed()).verdict_all()
}
