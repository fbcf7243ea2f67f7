//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    let answers = grading::challenge2::answers_of!(challenge2_exercise);
    grading::challenge2::grade(&answers, grading::seed()).verdict()
}
