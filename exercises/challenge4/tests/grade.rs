//! Grades your answer in `src/answer.rs`: run `cargo test` in this folder.

#[test]
fn learner_answer() -> Result<(), String> {
    challenge4::grader::grade(&challenge4::answers(), grading::seed()).verdict()
}
