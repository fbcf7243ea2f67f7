//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    let answers = grading::challenge4::answers_of!(challenge4_exercise);
    grading::challenge4::grade(&answers, grading::seed()).verdict()
}
