//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    let answers = grading::challenge3::answers_of!(challenge3_exercise);
    grading::challenge3::grade(&answers, grading::seed()).verdict()
}
