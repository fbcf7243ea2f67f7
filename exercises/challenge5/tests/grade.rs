//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    let answers = grading::challenge5::answers_of!(challenge5_exercise);
    grading::challenge5::grade(&answers, grading::seed()).verdict()
}
