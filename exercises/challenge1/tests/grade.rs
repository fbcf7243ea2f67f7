//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    challenge1::grader::grade(&challenge1::answers(), grading::seed()).verdict()
}
