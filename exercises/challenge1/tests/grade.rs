//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    let answers = grading::challenge1::answers_of!(challenge1_exercise);
    grading::challenge1::grade(&answers, grading::seed()).verdict()
}
