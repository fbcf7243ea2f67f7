//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    challenge3::grader::grade(&challenge3::answers(), grading::seed()).verdict()
}
